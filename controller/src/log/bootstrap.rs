//! `bootstrap.checkpoint`: the feature levels a new cluster starts with, in
//! the root of `metadata.log.dir` (Kafka's `BootstrapDirectory.writeBinaryFile`
//! through `BatchFileWriter`).
//!
//! Kafka frames it as a snapshot: a control batch at offset 0 with
//! SnapshotHeader (`lastContainedLogTimestamp` 0), one data batch with the
//! FeatureLevelRecords in `ApiMessageAndVersion` framing, and a control batch
//! with SnapshotFooter; epoch 0 throughout, timestamps the time of writing.
//! We write `metadata.version` only (the other features of Kafka 4.1 —
//! group.version, transaction.version, … — are broker features this
//! controller-only project does not finalize).
//!
//! Owns the file; it must not interpret feature levels.

use std::path::Path;

use bytes::Bytes;

use super::{Result, fs::write_atomically, snapshot::encode_snapshot};
use crate::metadata::{
    records::{FeatureLevelRecord, METADATA_VERSION_FEATURE},
    version::MetadataVersion,
};

/// File name in the root of `metadata.log.dir`.
pub const BOOTSTRAP_CHECKPOINT_FILE: &str = "bootstrap.checkpoint";

/// The bytes of `bootstrap.checkpoint` for `metadata_version`, stamped
/// `timestamp_ms`.
///
/// Errors: [`super::LogError::Record`] from encoding.
pub fn encode_bootstrap_checkpoint(
    metadata_version: MetadataVersion,
    timestamp_ms: i64,
) -> Result<Bytes> {
    let record = FeatureLevelRecord {
        name: METADATA_VERSION_FEATURE.into(),
        feature_level: metadata_version.feature_level(),
    };
    encode_snapshot(0, timestamp_ms, 0, &[], &[record.encode_framed()])
}

/// Writes `<log_dir>/bootstrap.checkpoint` atomically (temp file, fsync,
/// rename, directory fsync).
///
/// Errors: [`super::LogError::Io`].
pub fn write_bootstrap_checkpoint(log_dir: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically(&log_dir.join(BOOTSTRAP_CHECKPOINT_FILE), bytes)
}
