//! The simulated disks: each node's log is either a `MemoryLog` (whose
//! crash drops what was not flushed) or the real `FileLog` on the in-memory
//! file system `MemoryFs` (page-cache semantics, and a fault plan that fails
//! chosen writes, fsyncs and renames with EIO or ENOSPC).
//!
//! A disk fault is one more fault kind next to crashes and partitions: the
//! node whose log stops on a failed file operation stops as the real node
//! does (the sim crashes it) and restarts later from what was durable.
//!
//! Owns the choice of log and its crash; it must not check invariants (the
//! sim does).

use std::{path::Path, sync::Arc};

use bytes::Bytes;
use kraft_controller::log::{
    ElectionState, FileLog, FileLogConfig, FlushDone, FlushJob, LogAppendInfo, LogFetchInfo,
    MemoryLog, OffsetAndEpoch, ReplicatedLog, Result, SnapshotChunk,
    fault_fs::{Fault, MemoryFs},
    integrity,
};

/// The partition directory on every simulated `MemoryFs`.
pub const SIM_LOG_DIR: &str = "/data/__cluster_metadata-0";

/// Which log the simulated nodes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskKind {
    /// `MemoryLog`.
    Memory,
    /// `FileLog` on `MemoryFs`.
    FileOnMemoryFs,
}

/// `FileLog`'s settings in the simulation: small segments (so cleaning
/// deletes some) and the recovery point on every flush (deterministic: the
/// default interval reads the wall clock).
pub fn sim_file_log_config() -> FileLogConfig {
    FileLogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 256,
        recovery_point_interval_ms: 0,
    }
}

/// One node's disk.
#[derive(Debug)]
pub enum SimLog {
    /// `MemoryLog`.
    Memory(MemoryLog),
    /// `FileLog` on its own `MemoryFs`.
    File {
        /// The log, open on `fs`.
        log: Box<FileLog>,
        /// The node's file system.
        fs: MemoryFs,
    },
}

impl SimLog {
    /// An empty disk of `kind`.
    pub fn new(kind: DiskKind) -> Self {
        match kind {
            DiskKind::Memory => SimLog::Memory(MemoryLog::new()),
            DiskKind::FileOnMemoryFs => {
                let fs = MemoryFs::new();
                let log = open_file_log(&fs).expect("an empty MemoryFs opens");
                SimLog::File {
                    log: Box::new(log),
                    fs,
                }
            }
        }
    }

    /// A power loss: what was not durable is lost; a `FileLog` is then
    /// opened again from what its disk holds (recovery runs). Planned faults
    /// that did not fire are dropped (the disk was repaired, or space
    /// freed), so the restart itself never fails on one.
    ///
    /// Errors: the reopen's error (a recovery that refuses the disk).
    pub fn crash(&mut self) -> Result<()> {
        match self {
            SimLog::Memory(log) => {
                log.crash();
                Ok(())
            }
            SimLog::File { log, fs } => {
                fs.clear_faults();
                fs.crash();
                **log = open_file_log(fs)?;
                Ok(())
            }
        }
    }

    /// The start-up checks the real node runs before its engine
    /// (`log::integrity::check_at_start`), on a `FileLog` with the node's
    /// persisted election state: a healthy disk after any crash, clean or
    /// truncation must pass them (a refusal would make the node's volume
    /// "lost"). `Ok` for a `MemoryLog`.
    ///
    /// Errors: the refusal, as text.
    pub fn check_at_start(
        &self,
        node_id: i32,
        directory_id: uuid::Uuid,
        persisted: Option<&ElectionState>,
    ) -> std::result::Result<(), String> {
        let SimLog::File { log, .. } = self else {
            return Ok(());
        };
        let dir = Path::new(SIM_LOG_DIR);
        integrity::check_at_start(
            log,
            &dir.join("quorum-state"),
            persisted,
            integrity::LocalIdentity {
                log_dir: dir.parent().unwrap_or(dir),
                node_id,
                directory_id,
            },
        )
        .map_err(|e| e.to_string())
    }

    /// Whether the log stopped on a failed file operation (and the first
    /// one, as text).
    pub fn stopped(&self) -> Option<String> {
        match self {
            SimLog::Memory(_) => None,
            SimLog::File { log, .. } => log.stopped().map(ToString::to_string),
        }
    }

    /// Adds a fault to the file system's plan (no-op for `MemoryLog`).
    pub fn inject(&self, fault: Fault) {
        if let SimLog::File { fs, .. } = self {
            fs.inject(fault);
        }
    }

    /// Removes every planned fault (the failing disk was repaired or space
    /// freed).
    pub fn clear_faults(&self) {
        if let SimLog::File { fs, .. } = self {
            fs.clear_faults();
        }
    }

    /// The node's file system, for a `FileLog`.
    pub fn fs(&self) -> Option<&MemoryFs> {
        match self {
            SimLog::Memory(_) => None,
            SimLog::File { fs, .. } => Some(fs),
        }
    }
}

fn open_file_log(fs: &MemoryFs) -> Result<FileLog> {
    FileLog::open_on(
        Arc::new(fs.clone()),
        Path::new(SIM_LOG_DIR),
        sim_file_log_config(),
    )
}

macro_rules! delegate {
    ($self:ident, $log:ident => $e:expr) => {
        match $self {
            SimLog::Memory($log) => $e,
            SimLog::File { log: $log, .. } => $e,
        }
    };
}

impl ReplicatedLog for SimLog {
    fn append_as_leader(&mut self, batches: Bytes, epoch: i32) -> Result<LogAppendInfo> {
        delegate!(self, l => l.append_as_leader(batches, epoch))
    }
    fn append_as_follower(&mut self, batches: Bytes) -> Result<LogAppendInfo> {
        delegate!(self, l => l.append_as_follower(batches))
    }
    fn read(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        delegate!(self, l => l.read(start_offset, max_bytes))
    }
    fn truncate_to(&mut self, offset: i64) -> Result<()> {
        delegate!(self, l => l.truncate_to(offset))
    }
    fn flush(&mut self) -> Result<()> {
        delegate!(self, l => l.flush())
    }
    fn start_flush(&mut self) -> Result<FlushJob> {
        delegate!(self, l => l.start_flush())
    }
    fn finish_flush(&mut self, done: FlushDone) -> Result<()> {
        delegate!(self, l => l.finish_flush(done))
    }
    fn start_offset(&self) -> i64 {
        delegate!(self, l => l.start_offset())
    }
    fn end_offset(&self) -> OffsetAndEpoch {
        delegate!(self, l => l.end_offset())
    }
    fn flushed_end_offset(&self) -> i64 {
        delegate!(self, l => l.flushed_end_offset())
    }
    fn end_offset_for_epoch(&self, epoch: i32) -> OffsetAndEpoch {
        delegate!(self, l => l.end_offset_for_epoch(epoch))
    }
    fn latest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        delegate!(self, l => l.latest_snapshot_id())
    }
    fn snapshot_ids(&self) -> Vec<OffsetAndEpoch> {
        delegate!(self, l => l.snapshot_ids())
    }
    fn earliest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        delegate!(self, l => l.earliest_snapshot_id())
    }
    fn read_snapshot_chunk(
        &self,
        id: OffsetAndEpoch,
        position: u64,
        max_bytes: usize,
    ) -> Result<Option<SnapshotChunk>> {
        delegate!(self, l => l.read_snapshot_chunk(id, position, max_bytes))
    }
    fn read_snapshot(&self, id: OffsetAndEpoch) -> Result<Option<Bytes>> {
        // `FileLog` has an inherent `read_snapshot` too (a reader).
        match self {
            SimLog::Memory(l) => ReplicatedLog::read_snapshot(l, id),
            SimLog::File { log, .. } => ReplicatedLog::read_snapshot(log.as_ref(), id),
        }
    }
    fn write_snapshot(&mut self, id: OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        delegate!(self, l => l.write_snapshot(id, bytes))
    }
    fn register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        delegate!(self, l => l.register_snapshot(id))
    }
    fn begin_fetched_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        delegate!(self, l => l.begin_fetched_snapshot(id))
    }
    fn fetched_snapshot(&self) -> Option<(OffsetAndEpoch, u64)> {
        delegate!(self, l => l.fetched_snapshot())
    }
    fn append_fetched_snapshot(&mut self, bytes: &[u8]) -> Result<u64> {
        delegate!(self, l => l.append_fetched_snapshot(bytes))
    }
    fn abort_fetched_snapshot(&mut self) -> Result<()> {
        delegate!(self, l => l.abort_fetched_snapshot())
    }
    fn install_fetched_snapshot(&mut self) -> Result<OffsetAndEpoch> {
        delegate!(self, l => l.install_fetched_snapshot())
    }
    fn truncate_to_latest_snapshot(&mut self) -> Result<bool> {
        delegate!(self, l => l.truncate_to_latest_snapshot())
    }
    fn delete_before_snapshot(&mut self, id: OffsetAndEpoch) -> Result<bool> {
        delegate!(self, l => l.delete_before_snapshot(id))
    }
    fn size_in_bytes(&self) -> u64 {
        delegate!(self, l => l.size_in_bytes())
    }
}
