//! The metadata log: the `__cluster_metadata-0` partition in Kafka's on-disk
//! layout, plus the files beside it (quorum-state, checkpoints).
//!
//! Owns: segments, the sparse offset index, the leader epoch cache, truncation,
//! recovery after a crash, snapshot files and the quorum-state file. It must
//! not do networking nor make consensus decisions: the Raft engine tells it
//! what to append and truncate, and when to flush.
//!
//! # Contract of [`ReplicatedLog`] (Kafka's `org.apache.kafka.raft.ReplicatedLog`)
//!
//! - Offsets are dense: batches are stored in offset order with no holes; the
//!   log holds `[start_offset, end_offset)`.
//! - Appends are visible to reads as soon as they return, but are durable
//!   only once [`ReplicatedLog::flush`] returns: a crash may lose any suffix
//!   that was not flushed (never a prefix, never a hole).
//!   [`ReplicatedLog::flushed_end_offset`] is the offset below which every
//!   record survives a crash. A truncation is durable when
//!   [`ReplicatedLog::truncate_to`] returns (a truncated suffix never comes
//!   back after a crash).
//! - A truncation below the flushed end offset lowers it.
//! - Reads return whole batches only; at least one batch even if it is larger
//!   than the byte limit (so a consumer always makes progress).
//! - Every batch stored passed its CRC check; recovery on open truncates a torn,
//!   zero-filled or corrupt tail and never serves it (see [`FileLog`] and
//!   `docs/log.md`).
//!
//! Implementations: [`MemoryLog`] (simulation) and [`FileLog`] (Kafka's
//! on-disk layout). Beside the log: [`snapshot`] files, the [`quorum_state`]
//! file, [`meta_properties`] and [`bootstrap`] (`bootstrap.checkpoint`).

pub mod bootstrap;
pub mod epoch_cache;
mod file;
pub mod fs;
mod memory;
pub mod meta_properties;
pub mod quorum_state;
pub mod segment;
pub mod snapshot;

pub use file::{
    FileLog, FileLogConfig, METADATA_PARTITION_DIR, METADATA_TOPIC_ID, PARTITION_METADATA_FILE,
    encode_partition_metadata, partition_dir,
};
pub use memory::MemoryLog;
pub use meta_properties::MetaProperties;
pub use quorum_state::{ElectionState, QuorumStateStore};

use bytes::Bytes;

pub use crate::record::OffsetAndEpoch;
use crate::record::RecordError;

/// Errors of the metadata log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An append whose batches do not start at the log end offset, or are not
    /// in offset order.
    #[error("non-contiguous append: batch at offset {base_offset}, log end offset is {end_offset}")]
    NonContiguous {
        /// Base offset of the offending batch.
        base_offset: i64,
        /// The log end offset at the time.
        end_offset: i64,
    },
    /// An append with a leader epoch below the last one in the log.
    #[error("append with epoch {epoch} below the log's last epoch {last_epoch}")]
    EpochRegression {
        /// Epoch of the batch.
        epoch: i32,
        /// Last epoch in the log.
        last_epoch: i32,
    },
    /// A read or truncation outside `[start_offset, end_offset]`.
    #[error("offset {offset} is outside the log range [{start_offset}, {end_offset}]")]
    OffsetOutOfRange {
        /// The requested offset.
        offset: i64,
        /// Log start offset.
        start_offset: i64,
        /// Log end offset.
        end_offset: i64,
    },
    /// A batch that could not be read or built.
    #[error("bad record batch: {0}")]
    Record(#[from] RecordError),
    /// A file whose contents are not what this module writes (a hole between
    /// segments, a bad checkpoint line, a property that does not parse).
    #[error("{path}: {reason}")]
    Corrupt {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The log starts above offset 0 but no snapshot covers its prefix.
    #[error(
        "log in {dir} starts at offset {start_offset} but no snapshot ends at or above it (latest snapshot: {latest_snapshot:?}); the prefix is lost, refusing to open"
    )]
    MissingSnapshot {
        /// The partition directory.
        dir: std::path::PathBuf,
        /// The log's first offset.
        start_offset: i64,
        /// The newest snapshot found, if any.
        latest_snapshot: Option<OffsetAndEpoch>,
    },
    /// A quorum-state file written by a newer version (fatal at start).
    #[error(
        "{path}: quorum-state data_version {version} is not supported (0 and 1 are); refusing to start"
    )]
    UnsupportedQuorumStateVersion {
        /// The file.
        path: std::path::PathBuf,
        /// The version found.
        version: i64,
    },
    /// An I/O failure on a named file.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("writing", "fsync of", …).
        action: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Result alias of this module.
pub type Result<T, E = LogError> = std::result::Result<T, E>;

/// Offsets of an append: the first and last offset written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset of the first record appended.
    pub first_offset: i64,
    /// Offset of the last record appended.
    pub last_offset: i64,
}

/// Batches read from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFetchInfo {
    /// Whole RecordBatch v2 batches, concatenated; empty at the end of the log.
    pub records: Bytes,
    /// The offset the read started at.
    pub start_offset: i64,
}

/// The replicated metadata log (see the module doc for the contract).
pub trait ReplicatedLog: std::fmt::Debug + Send {
    /// Appends batches built by this node as leader: rewrites their base
    /// offsets to follow the log end offset and stamps `epoch` on each, then
    /// appends them. Not durable until [`Self::flush`].
    ///
    /// Errors: [`LogError::EpochRegression`] if `epoch` is below the last
    /// epoch in the log; I/O errors.
    fn append_as_leader(&mut self, batches: Bytes, epoch: i32) -> Result<LogAppendInfo>;

    /// Appends batches fetched from the leader, keeping their offsets and
    /// epochs. The first batch must start at the log end offset. Not durable
    /// until [`Self::flush`].
    ///
    /// Errors: [`LogError::NonContiguous`], [`LogError::EpochRegression`], a
    /// CRC failure ([`LogError::Record`]), I/O errors. On error nothing of the
    /// call is appended.
    fn append_as_follower(&mut self, batches: Bytes) -> Result<LogAppendInfo>;

    /// Reads whole batches from the batch containing `start_offset`, up to
    /// `max_bytes` (at least one batch if any is there).
    ///
    /// Errors: [`LogError::OffsetOutOfRange`] below the start or above the end.
    fn read(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo>;

    /// Removes every record at or above `offset` (which must be at or above the
    /// log start offset). The truncation is durable when this returns.
    fn truncate_to(&mut self, offset: i64) -> Result<()>;

    /// Makes every append so far durable (fsync), then returns.
    fn flush(&mut self) -> Result<()>;

    /// First offset held by the log (0, or the end offset of the snapshot it
    /// was cleaned up to).
    fn start_offset(&self) -> i64;

    /// The next offset to be written, and the epoch of the last batch (or of
    /// the latest snapshot for an empty log; 0 for a new log).
    fn end_offset(&self) -> OffsetAndEpoch;

    /// Offset below which everything is flushed.
    fn flushed_end_offset(&self) -> i64;

    /// Kafka's `endOffsetForEpoch`: the largest epoch `<= epoch` in the log and
    /// the end offset of that epoch (the start offset of the next epoch, or the
    /// log end offset for the last epoch). For an epoch older than every epoch
    /// in the log: `(start offset, epoch of the snapshot or 0)`.
    fn end_offset_for_epoch(&self, epoch: i32) -> OffsetAndEpoch;

    /// The id (end offset, epoch) of the newest snapshot, if any.
    fn latest_snapshot_id(&self) -> Option<OffsetAndEpoch>;
}
