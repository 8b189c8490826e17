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
//!   zero-filled or corrupt tail above the recovery point and never serves
//!   it; damage below the recovery point (flushed data the disk lost) refuses
//!   to open (see [`FileLog`] and `docs/log.md`).
//!
//! - Snapshots (KIP-630) are files beside the log, named by their id (end
//!   offset, epoch). A snapshot is durable once frozen. The log start offset
//!   is 0 or the end offset of a snapshot the log holds: the log is cleaned
//!   only below a snapshot ([`ReplicatedLog::delete_before_snapshot`], Kafka's
//!   `deleteBeforeSnapshot`), and the earliest snapshot kept (the bootstrap
//!   `0-0` checkpoint aside) is at the log start offset.
//! - A snapshot fetched from the leader is written through the log
//!   ([`ReplicatedLog::begin_fetched_snapshot`]; `.checkpoint.part` on disk),
//!   lost if a crash cuts it, and installed in one step
//!   ([`ReplicatedLog::install_fetched_snapshot`]): frozen, then the log is
//!   truncated fully and restarts at the snapshot's end offset.
//!
//! - A failed file operation stops [`FileLog`] (fail-stop, never retried):
//!   the failing call returns [`LogError::Io`] naming the operation and the
//!   file, every later call [`LogError::Stopped`]; the flushed end offset
//!   and the recovery point never pass what was durably fsynced. The node
//!   must exit; the next open recovers from what is on disk.
//!
//! Implementations: [`MemoryLog`] (simulation) and [`FileLog`] (Kafka's
//! on-disk layout). Beside the log: [`snapshot`] files, the [`quorum_state`]
//! file, [`meta_properties`] and [`bootstrap`] (`bootstrap.checkpoint`).
//! Every file operation of the partition directory goes through
//! [`fs::LogFs`] ([`fs::RealFs`] in production; [`fault_fs::MemoryFs`], an
//! in-memory file system with page-cache semantics and injected faults, in
//! tests and the simulation).

pub mod bootstrap;
pub mod epoch_cache;
pub mod fault_fs;
mod file;
pub mod flush;
pub mod fs;
pub mod integrity;
mod memory;
pub mod meta_properties;
pub mod quorum_state;
mod recovery;
pub mod recovery_point;
pub mod retention;
pub mod segment;
pub mod snapshot;

pub use file::{
    FileLog, FileLogConfig, METADATA_PARTITION_DIR, METADATA_TOPIC_ID, PARTITION_METADATA_FILE,
    encode_partition_metadata, partition_dir,
};
pub use flush::{FlushDone, FlushJob};
pub use memory::MemoryLog;
pub use meta_properties::MetaProperties;
pub use quorum_state::{ElectionState, QuorumStateStore};
pub use retention::RetentionConfig;

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
    /// Damage found on open below the recovery point: bytes that were
    /// fsynced are gone or changed, so this node lost records it may have
    /// acknowledged. Fatal: the volume is treated as lost.
    #[error(
        "{path}: damaged batch at offset {offset} (byte {position}: {reason}) below the recovery point {recovery_point}: this volume lost flushed records, refusing to start; treat it as lost: format it anew (new directory id) and re-add the node as a voter (docs/operations.md, \"A damaged metadata log volume\")"
    )]
    DamagedBelowRecoveryPoint {
        /// The segment file.
        path: std::path::PathBuf,
        /// The offset the damaged batch should have started at.
        offset: i64,
        /// Byte position of the damage in the file.
        position: u64,
        /// What was found there.
        reason: String,
        /// The recovery point read from `recovery-point-offset-checkpoint`.
        recovery_point: i64,
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
    /// Every call after a file operation failed in [`FileLog`]: the log
    /// stopped at the first failure (fail-stop, never retried; see
    /// `docs/log.md`, "Disk faults"). The node must exit; the next start
    /// recovers from what is on disk.
    #[error(
        "metadata log in {dir} stopped after a failed {failure}; a failed write or fsync is never retried: restart the node to recover from what is on disk"
    )]
    Stopped {
        /// The partition directory.
        dir: std::path::PathBuf,
        /// The first failure.
        failure: IoFailure,
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

/// The first failed file operation of a [`FileLog`], kept to name it in
/// every later [`LogError::Stopped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFailure {
    /// What was being done ("fsync of", "appending to", ...).
    pub action: &'static str,
    /// The file or directory.
    pub path: std::path::PathBuf,
    /// The OS error number (5 EIO, 28 ENOSPC), if the error had one.
    pub errno: Option<i32>,
    /// The OS error's text.
    pub message: String,
}

impl IoFailure {
    /// The failure of `err` if it is a [`LogError::Io`], as the log keeps
    /// it to name in every later [`LogError::Stopped`].
    pub(crate) fn of(err: &LogError) -> Option<Self> {
        match err {
            LogError::Io {
                action,
                path,
                source,
            } => Some(Self {
                action,
                path: path.clone(),
                errno: source.raw_os_error(),
                message: source.to_string(),
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.action,
            self.path.display(),
            self.message
        )
    }
}

/// Checks that `offset` lies in `[start_offset, end_offset]` (a read position
/// or a snapshot end offset).
///
/// Errors: [`LogError::OffsetOutOfRange`] naming the offset and the range.
pub(crate) fn check_in_log(offset: i64, start_offset: i64, end_offset: i64) -> Result<()> {
    if offset < start_offset || offset > end_offset {
        return Err(LogError::OffsetOutOfRange {
            offset,
            start_offset,
            end_offset,
        });
    }
    Ok(())
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

/// A piece of a frozen snapshot, read by byte position (FetchSnapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotChunk {
    /// Size of the whole snapshot (bytes).
    pub size: u64,
    /// Up to the requested number of bytes from the requested position; not
    /// necessarily on a batch boundary (Kafka's `UnalignedRecords`).
    pub bytes: Bytes,
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

    /// Starts a flush whose fsyncs run elsewhere ([`FlushJob::run`], on a
    /// thread that may block): the files holding records not yet fsynced,
    /// and the end offset they make durable. Nothing moves until
    /// [`Self::finish_flush`]. The default flushes at once (logs without
    /// files, as [`MemoryLog`]).
    ///
    /// Errors: [`LogError::Stopped`], or the default's flush error.
    fn start_flush(&mut self) -> Result<FlushJob> {
        self.flush()?;
        Ok(FlushJob::done_at(self.end_offset().offset, 0))
    }

    /// Ends a flush of [`Self::start_flush`]: the flushed end offset moves
    /// to the job's end offset, unless the log was truncated or reset while
    /// the job ran.
    ///
    /// Errors: the job's failed fsync ([`LogError::Io`]), after which the log
    /// stops as on a failed [`Self::flush`]; [`LogError::Stopped`].
    fn finish_flush(&mut self, done: FlushDone) -> Result<()> {
        done.result
    }

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
    fn latest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        self.snapshot_ids().last().copied()
    }

    /// Ids of the frozen snapshots, ascending (the bootstrap `0-0` checkpoint
    /// included when the log has one).
    fn snapshot_ids(&self) -> Vec<OffsetAndEpoch>;

    /// The oldest snapshot other than the bootstrap `0-0` checkpoint: the one
    /// at the log start offset once the log was cleaned.
    fn earliest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        self.snapshot_ids().into_iter().find(|id| id.offset > 0)
    }

    /// Up to `max_bytes` bytes of frozen snapshot `id` from byte `position`;
    /// `None` if the log holds no such snapshot.
    ///
    /// Errors: I/O errors.
    fn read_snapshot_chunk(
        &self,
        id: OffsetAndEpoch,
        position: u64,
        max_bytes: usize,
    ) -> Result<Option<SnapshotChunk>>;

    /// The whole of frozen snapshot `id` (snapshots of the metadata image are
    /// small); `None` if the log holds no such snapshot.
    ///
    /// Errors: I/O errors.
    fn read_snapshot(&self, id: OffsetAndEpoch) -> Result<Option<Bytes>> {
        let Some(first) = self.read_snapshot_chunk(id, 0, 0)? else {
            return Ok(None);
        };
        let size = usize::try_from(first.size).unwrap_or(usize::MAX);
        Ok(self.read_snapshot_chunk(id, 0, size)?.map(|c| c.bytes))
    }

    /// Writes a whole snapshot `id` of the state at a committed offset
    /// (`bytes` in `RecordsSnapshotWriter` framing) and freezes it: durable
    /// when this returns. A snapshot that exists already is left alone.
    ///
    /// Errors: [`LogError::OffsetOutOfRange`] below the log start offset or
    /// above the log end offset; I/O errors.
    fn write_snapshot(&mut self, id: OffsetAndEpoch, bytes: &[u8]) -> Result<()>;

    /// Makes the log aware of snapshot `id`, frozen by another writer (the
    /// server writes snapshots off its event loop, through
    /// [`snapshot::SnapshotWriter`]). A snapshot below the log start offset
    /// (written while the log moved past it) is deleted instead.
    ///
    /// Errors: [`LogError::MissingSnapshot`] if no such frozen snapshot
    /// exists; I/O errors.
    fn register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()>;

    /// Starts receiving snapshot `id` from the leader (Kafka's
    /// `createNewSnapshotUnchecked`: `id` is beyond this log). A snapshot
    /// being received already is dropped.
    ///
    /// Errors: I/O errors.
    fn begin_fetched_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()>;

    /// The snapshot being received and its size so far (bytes).
    fn fetched_snapshot(&self) -> Option<(OffsetAndEpoch, u64)>;

    /// Appends a chunk to the snapshot being received; returns its new size.
    ///
    /// Errors: [`LogError::MissingSnapshot`] if none is being received; I/O
    /// errors.
    fn append_fetched_snapshot(&mut self, bytes: &[u8]) -> Result<u64>;

    /// Drops the snapshot being received, if any.
    ///
    /// Errors: I/O errors.
    fn abort_fetched_snapshot(&mut self) -> Result<()>;

    /// Freezes the snapshot being received, then replaces the whole log by it
    /// (Kafka's `truncateToLatestSnapshot`): every batch goes, the log starts
    /// and ends at the snapshot's end offset, older snapshots are deleted.
    /// Durable when this returns. Returns the snapshot id.
    ///
    /// Errors: [`LogError::MissingSnapshot`] if none is being received;
    /// [`LogError::Corrupt`] if the received bytes are not whole batches
    /// with valid CRCs (checked before anything is replaced; the received
    /// snapshot is then dropped and the log left as it was); I/O errors.
    fn install_fetched_snapshot(&mut self) -> Result<OffsetAndEpoch>;

    /// If the latest snapshot is beyond the log (a crash between freezing a
    /// fetched snapshot and truncating the log), truncates the log fully to
    /// it, as [`Self::install_fetched_snapshot`] does. Returns whether it did.
    ///
    /// Errors: I/O errors.
    fn truncate_to_latest_snapshot(&mut self) -> Result<bool>;

    /// Kafka's `deleteBeforeSnapshot`: if snapshot `id` exists and is above
    /// the log start offset, moves the log start offset to `id.offset`,
    /// deletes older snapshots (the bootstrap `0-0` checkpoint is kept), then
    /// the whole segments below the new start. Returns whether anything
    /// changed. Durable when this returns.
    ///
    /// Errors: I/O errors.
    fn delete_before_snapshot(&mut self, id: OffsetAndEpoch) -> Result<bool>;

    /// Bytes held by the log's segments (Kafka's `log.size`, for
    /// `metadata.max.retention.bytes`).
    fn size_in_bytes(&self) -> u64;

    /// Kafka's `KafkaMetadataLog.maybeClean`: while the log and its snapshots
    /// exceed `retention.max_bytes`, or the oldest snapshot is older than
    /// `retention.max_ms` (by its `lastContainedLogTimestamp`), the oldest
    /// snapshot goes and the log start moves to the next one; the latest
    /// snapshot is always kept. Returns whether anything was deleted.
    ///
    /// Errors: I/O errors; a snapshot whose header does not decode.
    fn maybe_clean(&mut self, retention: &RetentionConfig, now_ms: u64) -> Result<bool>
    where
        Self: Sized,
    {
        retention::maybe_clean(self, retention, now_ms)
    }
}
