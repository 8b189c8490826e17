//! `bootstrap.checkpoint`: the feature levels a new cluster starts with, in
//! the root of `metadata.log.dir` (Kafka's `BootstrapDirectory.writeBinaryFile`
//! through `BatchFileWriter`).
//!
//! Kafka frames it as a snapshot: a control batch at offset 0 with
//! SnapshotHeader (`lastContainedLogTimestamp` 0), one data batch with the
//! FeatureLevelRecords in `ApiMessageAndVersion` framing, and a control batch
//! with SnapshotFooter; epoch 0 throughout, timestamps the time of writing.
//! The records are those Kafka's `Formatter` writes: `metadata.version`,
//! then each production feature at its default level for that
//! metadata.version (Kafka's `Feature.defaultLevel`), in Kafka's order, levels
//! of 0 left out. Found by the interop test against `kafka-storage format`.
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
    let mut records = vec![
        FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: metadata_version.feature_level(),
        }
        .encode_framed(),
    ];
    for (name, level) in default_feature_levels(metadata_version.feature_level()) {
        records.push(
            FeatureLevelRecord {
                name: name.into(),
                feature_level: level,
            }
            .encode_framed(),
        );
    }
    encode_snapshot(0, timestamp_ms, 0, &[], &records)
}

/// Kafka 4.4's production features other than metadata.version and
/// kraft.version, each with the metadata.version levels from which a level is
/// the default (`Feature.defaultLevel`: the highest feature level whose
/// bootstrap metadata.version is at or below the cluster's; Kafka 4.4.0's,
/// printed with jshell for levels 7..33): `eligible.leader.replicas.version`
/// 1 from 4.1-IV0 (26), `group.version` 1 from 4.0-IV0 (22), `share.version`
/// 1 from 4.2-IV0 (28) and 2 from 4.4-IV0 (31), `streams.version` 1 from
/// 4.2-IV1 (29), `transaction.version` 2 from 4.0-IV2 (24). In the order
/// Kafka's `Formatter` writes them (seen in `kafka-storage format` 4.4.0's
/// output at 4.4-IV2). Up to 4.1-IV1 these are Kafka 4.1.2's defaults too.
const FEATURE_DEFAULTS: &[(&str, &[(i16, i16)])] = &[
    ("eligible.leader.replicas.version", &[(26, 1)]),
    ("group.version", &[(22, 1)]),
    ("share.version", &[(28, 1), (31, 2)]),
    ("streams.version", &[(29, 1)]),
    ("transaction.version", &[(24, 2)]),
];

/// The non-zero default levels of the other features at `metadata_version`.
pub fn default_feature_levels(metadata_version: i16) -> Vec<(&'static str, i16)> {
    FEATURE_DEFAULTS
        .iter()
        .filter_map(|(name, steps)| {
            steps
                .iter()
                .filter(|(from, _)| metadata_version >= *from)
                .map(|(_, level)| *level)
                .max()
                .map(|level| (*name, level))
        })
        .collect()
}

/// Writes `<log_dir>/bootstrap.checkpoint` atomically (temp file, fsync,
/// rename, directory fsync).
///
/// Errors: [`super::LogError::Io`].
pub fn write_bootstrap_checkpoint(log_dir: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically(&log_dir.join(BOOTSTRAP_CHECKPOINT_FILE), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_4_1_bootstraps_the_broker_features_at_their_default_levels() {
        // As `kafka-storage format` 4.1.2 writes for 4.1-IV1 (interop mismatch 3).
        assert_eq!(
            default_feature_levels(27),
            vec![
                ("eligible.leader.replicas.version", 1),
                ("group.version", 1),
                ("transaction.version", 2)
            ]
        );
        assert_eq!(default_feature_levels(21), Vec::<(&str, i16)>::new());
        assert_eq!(default_feature_levels(22), vec![("group.version", 1)]);
    }

    #[test]
    fn kafka_4_4_bootstraps_share_and_streams_groups_from_4_2() {
        // As `kafka-storage format` 4.4.0 writes at 4.4-IV2, and Kafka 4.4.0's
        // Feature.defaultLevel at 28..31 (jshell).
        assert_eq!(
            default_feature_levels(33),
            vec![
                ("eligible.leader.replicas.version", 1),
                ("group.version", 1),
                ("share.version", 2),
                ("streams.version", 1),
                ("transaction.version", 2)
            ]
        );
        let level = |mv: i16, name: &str| {
            default_feature_levels(mv)
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, l)| l)
        };
        assert_eq!(level(27, "share.version"), None);
        assert_eq!(level(28, "share.version"), Some(1));
        assert_eq!(level(30, "share.version"), Some(1));
        assert_eq!(level(31, "share.version"), Some(2));
        assert_eq!(level(28, "streams.version"), None);
        assert_eq!(level(29, "streams.version"), Some(1));
    }
}
