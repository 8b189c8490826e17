//! Start-up checks that the files of a metadata log dir agree with each other
//! and with what Raft allows, before the engine uses any of them (issue 21).
//!
//! Checked, once the log is open (its own recovery already refused damage
//! below the recovery point and partition leader epochs going down along
//! the log, `recovery.rs`):
//!
//! - the log's epochs do not go below the epoch of the snapshot it starts
//!   at (recovery checks the segments among themselves);
//! - no batch in the log and no snapshot has a partition leader epoch above
//!   the epoch in `quorum-state` (Raft: a node appends a batch of epoch E only
//!   after it persisted E). That field sits outside the batch CRC; a disk
//!   that raised it would make the node start at the higher epoch and win an
//!   election with a log nobody else has. Apache Kafka's `QuorumState`
//!   starts at the log's epoch with a warning instead; we refuse;
//! - `quorum-state`'s `votedDirectoryId`, when the vote is for this node,
//!   is this node's `directory.id` from `meta.properties` (Kafka's
//!   `QuorumState` compares the whole voted key, id and directory, with the
//!   local one and only then resumes a candidacy; a vote for this id with
//!   another directory can only be a damaged file, so we refuse it);
//! - every snapshot's id is at a batch boundary the log agrees with (the
//!   batch holding `end offset - 1` ends there and has the snapshot's epoch)
//!   and the snapshot's own batches carry the epoch its name says.
//!
//! A violation is an [`IntegrityError`] naming the file, what is wrong and
//! the way out (the volume is treated as lost: `docs/operations.md`, "A
//! damaged metadata log volume"). This module only reads: it must not
//! repair, truncate or write anything, nor decide transitions (the engine
//! does, once these checks pass).

use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::{
    FileLog, LogError, OffsetAndEpoch, ReplicatedLog,
    meta_properties::{META_PROPERTIES_FILE, uuid_to_kafka_string},
    quorum_state::ElectionState,
    segment, snapshot,
};
use crate::record::iter_batches;

/// What every refusal ends with: the volume is treated as lost.
const WAY_OUT: &str = "refusing to start; treat this volume as lost: format it anew (new directory id) and re-add the node as a voter (docs/operations.md, \"A damaged metadata log volume\")";

/// A log dir whose files disagree with each other or with Raft's rules.
#[derive(Debug, thiserror::Error)]
pub enum IntegrityError {
    /// A batch's partition leader epoch is above the persisted epoch.
    #[error(
        "{segment}: batch at offset {offset} has partition leader epoch {epoch}, above epoch {quorum_epoch} in {quorum_state}; {WAY_OUT}"
    )]
    BatchEpochAboveQuorumState {
        /// The segment file holding the batch.
        segment: PathBuf,
        /// First offset of the first batch of that epoch.
        offset: i64,
        /// Its partition leader epoch.
        epoch: i32,
        /// `leaderEpoch` in quorum-state (0 when the file does not exist).
        quorum_epoch: i32,
        /// The quorum-state file.
        quorum_state: PathBuf,
    },
    /// The log's first epoch is below the epoch of the snapshot it starts at.
    #[error(
        "{segment}: batch at offset {offset} has partition leader epoch {epoch}, below epoch {snapshot_epoch} of the snapshot {snapshot} before it; {WAY_OUT}"
    )]
    BatchEpochBelowSnapshot {
        /// The segment file holding the batch.
        segment: PathBuf,
        /// Its base offset.
        offset: i64,
        /// Its partition leader epoch.
        epoch: i32,
        /// The snapshot file.
        snapshot: PathBuf,
        /// The snapshot's epoch.
        snapshot_epoch: i32,
    },
    /// A snapshot's epoch is above the persisted epoch.
    #[error(
        "{snapshot}: snapshot epoch {epoch} is above epoch {quorum_epoch} in {quorum_state}; {WAY_OUT}"
    )]
    SnapshotEpochAboveQuorumState {
        /// The snapshot file.
        snapshot: PathBuf,
        /// The epoch in its name.
        epoch: i32,
        /// `leaderEpoch` in quorum-state.
        quorum_epoch: i32,
        /// The quorum-state file.
        quorum_state: PathBuf,
    },
    /// quorum-state records a vote for this node with another directory id.
    #[error(
        "{quorum_state}: votedDirectoryId {stored} for this node (votedId {node_id}) is not directory.id {directory_id} in {meta_properties}; {WAY_OUT}"
    )]
    VotedDirectoryIdMismatch {
        /// The quorum-state file.
        quorum_state: PathBuf,
        /// This node's id.
        node_id: i32,
        /// `votedDirectoryId` (Kafka uuid text).
        stored: String,
        /// `directory.id` of meta.properties (Kafka uuid text).
        directory_id: String,
        /// The meta.properties file.
        meta_properties: PathBuf,
    },
    /// A snapshot's end offset is not where a batch of the log ends, or that
    /// batch has another epoch.
    #[error(
        "{snapshot}: snapshot id ({offset}, {epoch}) disagrees with the log: the batch holding offset {last_contained} spans [{base}, {last}] with epoch {batch_epoch}; {WAY_OUT}"
    )]
    SnapshotNotAtBatchBoundary {
        /// The snapshot file.
        snapshot: PathBuf,
        /// Its end offset.
        offset: i64,
        /// Its epoch.
        epoch: i32,
        /// `offset - 1`.
        last_contained: i64,
        /// Base offset of the log's batch holding `last_contained`.
        base: i64,
        /// Last offset of that batch.
        last: i64,
        /// Its partition leader epoch.
        batch_epoch: i32,
    },
    /// A snapshot's batches carry another epoch than its name.
    #[error(
        "{snapshot}: its batch at offset {offset} has partition leader epoch {found}, the snapshot id says {expected}; {WAY_OUT}"
    )]
    SnapshotRecordsEpochMismatch {
        /// The snapshot file.
        snapshot: PathBuf,
        /// Offset of the batch inside the snapshot.
        offset: i64,
        /// The batch's epoch.
        found: i32,
        /// The epoch of the snapshot id.
        expected: i32,
    },
    /// A snapshot's bytes do not parse as whole batches with good CRCs.
    #[error("{snapshot}: {reason}; {WAY_OUT}")]
    SnapshotUnreadable {
        /// The snapshot file.
        snapshot: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Reading the log or a snapshot for the check failed.
    #[error("checking {path}: {source}")]
    Read {
        /// The partition directory.
        path: PathBuf,
        /// What failed.
        source: LogError,
    },
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, IntegrityError>;

/// The identity the checks compare the files with: `meta.properties`' node id
/// and directory id, and the log dir it was read from.
#[derive(Debug, Clone, Copy)]
pub struct LocalIdentity<'a> {
    /// `metadata.log.dir` (holds `meta.properties`).
    pub log_dir: &'a Path,
    /// `node.id`.
    pub node_id: i32,
    /// `directory.id`.
    pub directory_id: Uuid,
}

/// Runs every check of the module doc on an opened `log`, the election state
/// read from `quorum_state` (`None`: no file, epoch 0) and `local`.
///
/// Errors: the first violation found, as an [`IntegrityError`]; nothing is
/// written either way.
pub fn check_at_start(
    log: &FileLog,
    quorum_state: &Path,
    stored: Option<&ElectionState>,
    local: LocalIdentity<'_>,
) -> Result<()> {
    check_voted_directory(quorum_state, stored, local)?;
    let quorum_epoch = stored.map_or(0, |s| s.epoch);
    check_log_epochs(log, quorum_state, quorum_epoch)?;
    for &id in log.snapshots() {
        check_snapshot(log, id, quorum_state, quorum_epoch)?;
    }
    Ok(())
}

/// A vote recorded for this node id names this node's directory (the
/// voted key Kafka's `QuorumState` compares with the local one).
fn check_voted_directory(
    quorum_state: &Path,
    stored: Option<&ElectionState>,
    local: LocalIdentity<'_>,
) -> Result<()> {
    if let Some((id, Some(dir))) = stored.and_then(|s| s.voted_key)
        && id == local.node_id
        && dir != local.directory_id
    {
        return Err(IntegrityError::VotedDirectoryIdMismatch {
            quorum_state: quorum_state.to_path_buf(),
            node_id: id,
            stored: uuid_to_kafka_string(dir),
            directory_id: uuid_to_kafka_string(local.directory_id),
            meta_properties: local.log_dir.join(META_PROPERTIES_FILE),
        });
    }
    Ok(())
}

/// No epoch in the log above `quorum_epoch`, and none below the epoch of
/// the snapshot the log starts at; names the segment holding the first
/// batch of the offending epoch.
fn check_log_epochs(log: &FileLog, quorum_state: &Path, quorum_epoch: i32) -> Result<()> {
    let segment_of = |offset: i64| {
        let base = log
            .segment_base_offsets()
            .into_iter()
            .take_while(|&b| b <= offset)
            .last()
            .unwrap_or_else(|| log.start_offset());
        log.dir().join(segment::log_file_name(base))
    };
    // Epochs never go down along the log (recovery checks the segments
    // among themselves), from the snapshot below it on: the first batch at
    // or after the log start has an epoch no lower than that snapshot's.
    // Batches below the log start (a cleaned log keeps the segment that
    // holds its start, older batches included) are not the log's and are
    // not compared: an old epoch there is no damage.
    let start = log.start_offset();
    let at_start = log
        .epoch_entries()
        .iter()
        .take_while(|e| e.start_offset <= start)
        .last()
        .or_else(|| log.epoch_entries().first());
    if let (Some(first), Some(snapshot)) = (
        at_start.filter(|_| ReplicatedLog::end_offset(log).offset > start),
        log.snapshots().iter().rev().find(|s| s.offset <= start),
    ) && first.epoch < snapshot.epoch
    {
        let offset = first.start_offset.max(start);
        return Err(IntegrityError::BatchEpochBelowSnapshot {
            segment: segment_of(offset),
            offset,
            epoch: first.epoch,
            snapshot: log.dir().join(snapshot::snapshot_file_name(*snapshot)),
            snapshot_epoch: snapshot.epoch,
        });
    }
    let Some(entry) = log.epoch_entries().iter().find(|e| e.epoch > quorum_epoch) else {
        return Ok(());
    };
    Err(IntegrityError::BatchEpochAboveQuorumState {
        segment: segment_of(entry.start_offset),
        offset: entry.start_offset,
        epoch: entry.epoch,
        quorum_epoch,
        quorum_state: quorum_state.to_path_buf(),
    })
}

/// Snapshot `id`: epoch not above `quorum_epoch`, at a batch boundary the
/// log agrees with (when the log holds `id.offset - 1`), its own batches of
/// `id.epoch`.
fn check_snapshot(
    log: &FileLog,
    id: OffsetAndEpoch,
    quorum_state: &Path,
    quorum_epoch: i32,
) -> Result<()> {
    let path = log.dir().join(snapshot::snapshot_file_name(id));
    let read_err = |source| IntegrityError::Read {
        path: log.dir().to_path_buf(),
        source,
    };
    if id.epoch > quorum_epoch {
        return Err(IntegrityError::SnapshotEpochAboveQuorumState {
            snapshot: path,
            epoch: id.epoch,
            quorum_epoch,
            quorum_state: quorum_state.to_path_buf(),
        });
    }
    let last_contained = id.offset - 1;
    if last_contained >= log.start_offset() && id.offset <= log.end_offset().offset {
        let read = log.read(last_contained, 1).map_err(read_err)?;
        if let Some(Ok((h, _))) = iter_batches(&read.records, false).next()
            && (h.last_offset() != last_contained || h.partition_leader_epoch != id.epoch)
        {
            return Err(IntegrityError::SnapshotNotAtBatchBoundary {
                snapshot: path,
                offset: id.offset,
                epoch: id.epoch,
                last_contained,
                base: h.base_offset,
                last: h.last_offset(),
                batch_epoch: h.partition_leader_epoch,
            });
        }
    }
    let Some(bytes) = ReplicatedLog::read_snapshot(log, id).map_err(read_err)? else {
        return Ok(());
    };
    for item in iter_batches(&bytes, true) {
        let (h, _) = item.map_err(|e| IntegrityError::SnapshotUnreadable {
            snapshot: path.clone(),
            reason: e.to_string(),
        })?;
        if h.partition_leader_epoch != id.epoch {
            return Err(IntegrityError::SnapshotRecordsEpochMismatch {
                snapshot: path,
                offset: h.base_offset,
                found: h.partition_leader_epoch,
                expected: id.epoch,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "integrity_tests.rs"]
mod tests;
