//! Retention of the metadata log (KIP-630): which snapshots and log segments
//! may go, as Kafka's `KafkaMetadataLog.maybeClean` decides it from
//! `metadata.max.retention.bytes` and `metadata.max.retention.ms`.
//!
//! Owns the policy only; the deletions are the log's
//! ([`ReplicatedLog::delete_before_snapshot`]). It must not delete the latest
//! snapshot, nor move the log start anywhere but to a snapshot's end offset.

use super::{OffsetAndEpoch, ReplicatedLog, Result};
use crate::record::{BatchHeader, ControlRecord, DecodedBatch};

/// Kafka's `metadata.max.retention.bytes` default: 100 MiB.
pub const DEFAULT_MAX_RETENTION_BYTES: u64 = 100 * 1024 * 1024;
/// Kafka's `metadata.max.retention.ms` default: 7 days.
pub const DEFAULT_MAX_RETENTION_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// How much of the metadata log to keep (Kafka's `MetadataLogConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// `metadata.max.retention.bytes`: the log's segments plus its snapshots
    /// may hold this many bytes before the oldest snapshot and the log below
    /// the next one are deleted; `None` disables the size rule.
    pub max_bytes: Option<u64>,
    /// `metadata.max.retention.ms`: a snapshot whose
    /// `lastContainedLogTimestamp` is older than this (ms) is deleted, with
    /// the log below the next snapshot; `None` disables the time rule.
    pub max_ms: Option<u64>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            max_bytes: Some(DEFAULT_MAX_RETENTION_BYTES),
            max_ms: Some(DEFAULT_MAX_RETENTION_MS),
        }
    }
}

impl RetentionConfig {
    /// Keeps everything (no cleaning).
    pub const KEEP_ALL: Self = Self {
        max_bytes: None,
        max_ms: None,
    };
}

/// The `lastContainedLogTimestamp` of a snapshot's SnapshotHeader (ms), or
/// `None` if the snapshot is missing or has no header.
///
/// Errors: I/O errors; a first batch that does not decode.
pub fn snapshot_timestamp<L: ReplicatedLog + ?Sized>(
    log: &L,
    id: OffsetAndEpoch,
) -> Result<Option<i64>> {
    let Some(head) = log.read_snapshot_chunk(id, 0, 61)? else {
        return Ok(None);
    };
    let Ok(header) = BatchHeader::parse(&head.bytes) else {
        return Ok(None);
    };
    let Some(first) = log.read_snapshot_chunk(id, 0, header.size_in_bytes())? else {
        return Ok(None);
    };
    let batch = DecodedBatch::decode(&first.bytes)?;
    if !batch.header.is_control() {
        return Ok(None);
    }
    Ok(batch.control_records()?.into_iter().find_map(|r| match r {
        ControlRecord::SnapshotHeader(h) => Some(h.last_contained_log_timestamp),
        _ => None,
    }))
}

/// [`ReplicatedLog::maybe_clean`]: the size rule, then the time rule, each
/// walking the snapshots oldest first (Kafka's `cleanSnapshots`).
///
/// Errors: I/O errors; a snapshot header that does not decode.
pub fn maybe_clean<L: ReplicatedLog + ?Sized>(
    log: &mut L,
    retention: &RetentionConfig,
    now_ms: u64,
) -> Result<bool> {
    let mut cleaned = false;
    if let Some(max_bytes) = retention.max_bytes {
        let mut sizes = Vec::new();
        for id in cleanable(&*log) {
            let size = log.read_snapshot_chunk(id, 0, 0)?.map_or(0, |c| c.size);
            sizes.push((id, size));
        }
        let mut snapshots_total: u64 = sizes.iter().map(|(_, s)| s).sum();
        for pair in sizes.windows(2) {
            let (oldest, oldest_size) = pair[0];
            let next = pair[1].0;
            if log.size_in_bytes() + snapshots_total <= max_bytes {
                break;
            }
            tracing::info!(
                snapshot = %oldest,
                log_bytes = log.size_in_bytes(),
                snapshot_bytes = snapshots_total,
                max_bytes,
                "metadata.max.retention.bytes exceeded; deleting the oldest snapshot and the log below the next"
            );
            if !log.delete_before_snapshot(next)? {
                break;
            }
            snapshots_total -= oldest_size;
            cleaned = true;
        }
    }
    if let Some(max_ms) = retention.max_ms {
        let ids = cleanable(&*log);
        for pair in ids.windows(2) {
            let (oldest, next) = (pair[0], pair[1]);
            let Some(timestamp) = snapshot_timestamp(&*log, oldest)? else {
                break;
            };
            let age = i64::try_from(now_ms)
                .unwrap_or(i64::MAX)
                .saturating_sub(timestamp);
            if age <= i64::try_from(max_ms).unwrap_or(i64::MAX) {
                break;
            }
            tracing::info!(
                snapshot = %oldest,
                age_ms = age,
                max_ms,
                "metadata.max.retention.ms exceeded; deleting the oldest snapshot and the log below the next"
            );
            if !log.delete_before_snapshot(next)? {
                break;
            }
            cleaned = true;
        }
    }
    Ok(cleaned)
}

/// Snapshots that retention may consider, ascending: all but the bootstrap
/// `0-0` checkpoint, from the one at the log start on.
fn cleanable<L: ReplicatedLog + ?Sized>(log: &L) -> Vec<OffsetAndEpoch> {
    let start = log.start_offset();
    log.snapshot_ids()
        .into_iter()
        .filter(|id| id.offset > 0 && id.offset >= start)
        .collect()
}
