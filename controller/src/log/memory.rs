//! An in-memory [`ReplicatedLog`] for the simulation and engine tests, with a
//! crash that loses what was not flushed.

use bytes::{Bytes, BytesMut};

use super::{LogAppendInfo, LogError, LogFetchInfo, OffsetAndEpoch, ReplicatedLog, Result};
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
    snapshot: Option<OffsetAndEpoch>,
}

impl MemoryLog {
    /// An empty log starting at offset 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulates a crash: everything at or above the flushed end offset is lost.
    pub fn crash(&mut self) {
        let flushed = self.flushed_end_offset;
        self.batches.retain(|b| b.header.last_offset() < flushed);
    }

    fn end(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.start_offset, |b| b.header.next_offset())
    }

    fn last_epoch(&self) -> i32 {
        self.batches.last().map_or_else(
            || self.snapshot.map_or(0, |s| s.epoch),
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
        if start_offset < self.start_offset || start_offset > end {
            return Err(LogError::OffsetOutOfRange {
                offset: start_offset,
                start_offset: self.start_offset,
                end_offset: end,
            });
        }
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
        let mut result =
            OffsetAndEpoch::new(self.start_offset, self.snapshot.map_or(0, |s| s.epoch));
        for b in self
            .batches
            .iter()
            .take_while(|b| b.header.partition_leader_epoch <= epoch)
        {
            result = OffsetAndEpoch::new(b.header.next_offset(), b.header.partition_leader_epoch);
        }
        result
    }

    fn latest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        self.snapshot
    }
}
