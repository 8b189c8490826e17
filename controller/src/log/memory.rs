//! An in-memory [`ReplicatedLog`] for the simulation and engine tests, with a
//! crash that loses what was not flushed.
//!
//! Snapshots are kept as bytes by id; a frozen one survives a crash, a
//! fetched one still being received does not (its `.part` file would be
//! deleted on open). The log start offset moves only to a snapshot's end
//! offset, as on disk.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

use super::{
    LogAppendInfo, LogError, LogFetchInfo, OffsetAndEpoch, ReplicatedLog, Result, SnapshotChunk,
};
use crate::record::{self, BatchHeader};

#[derive(Debug, Clone)]
struct StoredBatch {
    header: BatchHeader,
    bytes: Bytes,
}

/// A log held in memory. [`MemoryLog::crash`] drops every batch that was not
/// flushed, as a power loss would.
#[derive(Debug, Clone, Default)]
pub struct MemoryLog {
    batches: Vec<StoredBatch>,
    start_offset: i64,
    flushed_end_offset: i64,
    /// Frozen snapshots by id.
    snapshots: BTreeMap<OffsetAndEpoch, Bytes>,
    /// A snapshot being received from the leader.
    fetching: Option<(OffsetAndEpoch, BytesMut)>,
}

impl MemoryLog {
    /// An empty log starting at offset 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulates a crash: everything at or above the flushed end offset is
    /// lost, and so is a snapshot being received. Then the log recovers as
    /// on open ([`ReplicatedLog::truncate_to_latest_snapshot`]).
    pub fn crash(&mut self) {
        let flushed = self.flushed_end_offset;
        self.batches.retain(|b| b.header.last_offset() < flushed);
        self.fetching = None;
        // Cannot fail in memory.
        let _ = self.truncate_to_latest_snapshot();
    }

    /// The epoch of the snapshot at the log start offset (0 if none).
    fn start_epoch(&self) -> i32 {
        self.snapshots
            .keys()
            .rev()
            .find(|id| id.offset == self.start_offset)
            .map_or(0, |id| id.epoch)
    }

    /// Deletes the snapshots below `offset` but the bootstrap `0-0` one.
    fn forget_snapshots_before(&mut self, offset: i64) {
        self.snapshots
            .retain(|id, _| id.offset >= offset || id.offset == 0);
    }

    fn end(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.start_offset, |b| b.header.next_offset())
    }

    fn last_epoch(&self) -> i32 {
        self.batches.last().map_or_else(
            || self.snapshots.keys().next_back().map_or(0, |s| s.epoch),
            |b| b.header.partition_leader_epoch,
        )
    }

    fn validate(&self, batches: &[u8], mut expected: i64) -> Result<Vec<StoredBatch>> {
        let mut last_epoch = self.last_epoch();
        let mut out = Vec::new();
        let mut position = 0;
        for item in record::iter_batches(batches, true) {
            let (header, bytes) = item?;
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
            out.push(StoredBatch {
                header,
                bytes: Bytes::copy_from_slice(bytes),
            });
            position += bytes.len();
        }
        debug_assert_eq!(position, batches.len());
        Ok(out)
    }

    fn push(&mut self, batches: Vec<StoredBatch>) -> Result<LogAppendInfo> {
        let first_offset = self.end();
        self.batches.extend(batches);
        Ok(LogAppendInfo {
            first_offset,
            last_offset: self.end() - 1,
        })
    }
}

impl ReplicatedLog for MemoryLog {
    fn append_as_leader(&mut self, batches: Bytes, epoch: i32) -> Result<LogAppendInfo> {
        let mut stamped = BytesMut::from(&batches[..]);
        let mut next = self.end();
        let mut position = 0;
        while position < stamped.len() {
            let header = BatchHeader::parse(&stamped[position..])?;
            let size = header.size_in_bytes();
            record::batch_set_offset_and_epoch(
                &mut stamped[position..position + size],
                next,
                epoch,
            );
            next += i64::from(header.last_offset_delta) + 1;
            position += size;
        }
        let validated = self.validate(&stamped, self.end())?;
        self.push(validated)
    }

    fn append_as_follower(&mut self, batches: Bytes) -> Result<LogAppendInfo> {
        let validated = self.validate(&batches, self.end())?;
        self.push(validated)
    }

    fn read(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        let end = self.end();
        super::check_in_log(start_offset, self.start_offset, end)?;
        let mut out = BytesMut::new();
        for b in self
            .batches
            .iter()
            .filter(|b| b.header.last_offset() >= start_offset)
        {
            if !out.is_empty() && out.len() + b.bytes.len() > max_bytes {
                break;
            }
            out.extend_from_slice(&b.bytes);
        }
        Ok(LogFetchInfo {
            records: out.freeze(),
            start_offset,
        })
    }

    fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if offset < self.start_offset {
            return Err(LogError::OffsetOutOfRange {
                offset,
                start_offset: self.start_offset,
                end_offset: self.end(),
            });
        }
        self.batches.retain(|b| b.header.base_offset < offset);
        // A batch straddling `offset` goes too: batches are never split.
        while self
            .batches
            .last()
            .is_some_and(|b| b.header.last_offset() >= offset)
        {
            self.batches.pop();
        }
        self.flushed_end_offset = self.flushed_end_offset.min(self.end());
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flushed_end_offset = self.end();
        Ok(())
    }

    fn start_offset(&self) -> i64 {
        self.start_offset
    }

    fn end_offset(&self) -> OffsetAndEpoch {
        OffsetAndEpoch::new(self.end(), self.last_epoch())
    }

    fn flushed_end_offset(&self) -> i64 {
        self.flushed_end_offset
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> OffsetAndEpoch {
        // Batches are dense and epochs never decrease, so the end of the last
        // batch with an epoch <= `epoch` is where that epoch ends.
        let mut result = OffsetAndEpoch::new(self.start_offset, self.start_epoch());
        for b in self
            .batches
            .iter()
            .take_while(|b| b.header.partition_leader_epoch <= epoch)
        {
            result = OffsetAndEpoch::new(b.header.next_offset(), b.header.partition_leader_epoch);
        }
        result
    }

    fn snapshot_ids(&self) -> Vec<OffsetAndEpoch> {
        self.snapshots.keys().copied().collect()
    }

    fn read_snapshot_chunk(
        &self,
        id: OffsetAndEpoch,
        position: u64,
        max_bytes: usize,
    ) -> Result<Option<SnapshotChunk>> {
        Ok(self.snapshots.get(&id).map(|bytes| {
            let size = bytes.len();
            let from = usize::try_from(position).unwrap_or(usize::MAX).min(size);
            let to = from.saturating_add(max_bytes).min(size);
            SnapshotChunk {
                size: size as u64,
                bytes: bytes.slice(from..to),
            }
        }))
    }

    fn write_snapshot(&mut self, id: OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        super::check_in_log(id.offset, self.start_offset, self.end())?;
        self.snapshots
            .entry(id)
            .or_insert_with(|| Bytes::copy_from_slice(bytes));
        Ok(())
    }

    fn register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        if self.snapshots.contains_key(&id) {
            Ok(())
        } else {
            Err(LogError::MissingSnapshot {
                dir: "<memory>".into(),
                start_offset: id.offset,
                latest_snapshot: self.latest_snapshot_id(),
            })
        }
    }

    fn begin_fetched_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.fetching = Some((id, BytesMut::new()));
        Ok(())
    }

    fn fetched_snapshot(&self) -> Option<(OffsetAndEpoch, u64)> {
        self.fetching.as_ref().map(|(id, b)| (*id, b.len() as u64))
    }

    fn append_fetched_snapshot(&mut self, bytes: &[u8]) -> Result<u64> {
        let latest = self.latest_snapshot_id();
        let Some((_, buffer)) = self.fetching.as_mut() else {
            return Err(LogError::MissingSnapshot {
                dir: "<memory>".into(),
                start_offset: -1,
                latest_snapshot: latest,
            });
        };
        buffer.extend_from_slice(bytes);
        Ok(buffer.len() as u64)
    }

    fn abort_fetched_snapshot(&mut self) -> Result<()> {
        self.fetching = None;
        Ok(())
    }

    fn install_fetched_snapshot(&mut self) -> Result<OffsetAndEpoch> {
        let Some((id, bytes)) = self.fetching.take() else {
            return Err(LogError::MissingSnapshot {
                dir: "<memory>".into(),
                start_offset: -1,
                latest_snapshot: self.latest_snapshot_id(),
            });
        };
        super::snapshot::verify_batches(&bytes).map_err(|reason| LogError::Corrupt {
            path: "<memory>".into(),
            reason,
        })?;
        self.snapshots.insert(id, bytes.freeze());
        self.truncate_to_latest_snapshot()?;
        Ok(id)
    }

    fn truncate_to_latest_snapshot(&mut self) -> Result<bool> {
        let Some(latest) = self.latest_snapshot_id() else {
            return Ok(false);
        };
        let end = self.end_offset();
        if latest.epoch > end.epoch || (latest.epoch == end.epoch && latest.offset > end.offset) {
            self.batches.clear();
            self.start_offset = latest.offset;
            self.flushed_end_offset = latest.offset;
            self.forget_snapshots_before(latest.offset);
            return Ok(true);
        }
        Ok(false)
    }

    fn delete_before_snapshot(&mut self, id: OffsetAndEpoch) -> Result<bool> {
        let latest = self.latest_snapshot_id();
        if !self.snapshots.contains_key(&id)
            || id.offset <= self.start_offset
            || latest.is_none_or(|l| id.offset > l.offset)
            || id.offset > self.end()
        {
            return Ok(false);
        }
        self.forget_snapshots_before(id.offset);
        self.start_offset = id.offset;
        self.batches.retain(|b| b.header.last_offset() >= id.offset);
        // Batches are never split; one straddling the new start keeps its
        // records below it, unreadable.
        Ok(true)
    }

    fn size_in_bytes(&self) -> u64 {
        self.batches.iter().map(|b| b.bytes.len() as u64).sum()
    }
}
