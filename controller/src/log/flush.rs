//! A flush whose fsyncs may run off the event loop (issue 23): the loop
//! takes a [`FlushJob`] from the log ([`super::ReplicatedLog::start_flush`]),
//! runs it on a blocking thread while it goes on serving requests and
//! appending (a leader with followers), or on the loop itself while the
//! disk is fast (other nodes; decisions D5), and hands the [`FlushDone`] back ([`super::ReplicatedLog::finish_flush`]); only then
//! does the log's flushed end offset move, so the high watermark still
//! counts only what is on disk (DESIGN.md §2.3, Kafka's
//! `KafkaRaftClient.flushLeaderLog` before `updateLocalState`).
//!
//! A job holds shared handles of the segment `.log` files that had writes
//! not yet fsynced when it started (not the `.index` files: derived from
//! the records and rebuilt on open, [`super::segment::Segment::unsynced_log_file`]),
//! and the log end offset then: an `fdatasync` makes
//! durable everything written to the file before it began, so when it
//! returns `Ok` every offset below that end is durable, whatever was
//! appended meanwhile. A truncation (or a reset to a snapshot) while the job
//! runs may remove and rewrite offsets below that end, so the log keeps a
//! count of them and a job that crossed one moves nothing.
//!
//! A failed fsync stops the log as a failed synchronous one does, and at
//! once: the job records it where the log reads it before every call, so
//! nothing is appended, rolled or fsynced on the loop after it (a later
//! fsync of the same open file may report success and write nothing, and a
//! segment roll would then write the recovery point above lost bytes). The
//! failure also comes back in [`FlushDone`], and `finish_flush` returns it
//! through the log's fail-stop guard; nothing is retried. While a job runs,
//! a segment roll does not write the recovery point either (the job's end
//! does): the job's failure may not be recorded yet when the roll fsyncs.

use std::{
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use super::{IoFailure, Result, fs::LogFile, fs::io_err};

/// The first failed fsync of a [`FlushJob`], shared between the log and
/// its jobs: set by the job's thread when it happens, so that the log
/// refuses every call from then on, before the job's result reaches it
/// (fail-stop at once: a later fsync of the same open file may report
/// success and write nothing).
pub(crate) type JobFailure = Arc<OnceLock<IoFailure>>;

/// One file of a [`FlushJob`]: a handle sharing the log's open file, and
/// its path for the error message.
#[derive(Debug, Clone)]
pub struct SyncTarget {
    /// The open `.log` file of a segment.
    pub file: Arc<dyn LogFile>,
    /// Its path.
    pub path: PathBuf,
}

/// The fsyncs of one flush, to run on a thread that may block
/// ([`Self::run`]), taken by [`super::ReplicatedLog::start_flush`].
#[derive(Debug)]
pub struct FlushJob {
    /// Files with writes not yet fsynced when the job started.
    pub(crate) files: Vec<SyncTarget>,
    /// The log end offset when the job started: durable once the job is.
    pub(crate) end_offset: i64,
    /// The log's count of truncations and resets when the job started.
    pub(crate) rewinds: u64,
    /// Where a failed fsync is recorded for the log at once.
    pub(crate) failure: JobFailure,
}

impl FlushJob {
    /// A job with nothing to fsync: the log was flushed already (or has no
    /// files, as [`super::MemoryLog`]) up to `end_offset`.
    pub fn done_at(end_offset: i64, rewinds: u64) -> Self {
        Self {
            files: Vec::new(),
            end_offset,
            rewinds,
            failure: JobFailure::default(),
        }
    }

    /// How many files the job fsyncs.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Fsyncs (`fdatasync`) every file of the job, in order, stopping at
    /// the first failure. Blocks for as long as the fsyncs take: call it
    /// on a thread that may block (`tokio::task::spawn_blocking`), or on the
    /// event loop only where holding it that long is fine (decisions D5).
    pub fn run(self) -> FlushDone {
        let result = self
            .files
            .iter()
            .try_for_each(|t| t.file.sync_data().map_err(io_err("fsync of", &t.path)));
        if let Some(failure) = result.as_ref().err().and_then(IoFailure::of) {
            // Only the first failure is kept, as the log keeps its own.
            let _ = self.failure.set(failure);
        }
        FlushDone {
            end_offset: self.end_offset,
            rewinds: self.rewinds,
            result,
        }
    }
}

/// What a [`FlushJob`] did, for [`super::ReplicatedLog::finish_flush`].
#[derive(Debug)]
pub struct FlushDone {
    /// The log end offset when the job started.
    pub(crate) end_offset: i64,
    /// The log's count of truncations and resets when the job started: if
    /// the log has counted more since, the job moves nothing.
    pub(crate) rewinds: u64,
    /// `Ok`, or the first fsync that failed ([`super::LogError::Io`]).
    pub(crate) result: Result<()>,
}
