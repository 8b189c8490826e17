//! The bootstrap metadata `format` writes: the feature levels a new cluster
//! starts with, and where they go on disk ([`BootstrapLayout`]).
//!
//! Up to 4.1-IV1 they are `bootstrap.checkpoint` in the root of
//! `metadata.log.dir` (Kafka's `BootstrapDirectory.writeBinaryFile` through
//! `BatchFileWriter`, as Kafka 4.1.2's `kafka-storage format` writes it):
//! framed as a snapshot, a control batch at offset 0 with SnapshotHeader
//! (`lastContainedLogTimestamp` 0), one data batch with the
//! FeatureLevelRecords in `ApiMessageAndVersion` framing, and a control batch
//! with SnapshotFooter; epoch 0 throughout, timestamps the time of writing.
//! From 4.2-IV0 they are the data batch of the
//! `00000000000000000000-0000000000.checkpoint` instead (KIP-1170, Kafka's
//! `Formatter.writeBoostrapSnapshot`, as Kafka 4.4.0's writes it; see
//! [`super::snapshot::encode_bootstrap_snapshot`]).
//!
//! The records are those Kafka's `Formatter` writes: `metadata.version`,
//! then each production feature at its default level for that
//! metadata.version (Kafka's `Feature.defaultLevel`), in Kafka's order, levels
//! of 0 left out. Found by the interop test against `kafka-storage format`.
//!
//! Owns the file, the records and the choice of layout; it must not
//! interpret feature levels.

use std::path::Path;

use bytes::Bytes;

use super::{Result, fs::write_atomically, snapshot::encode_snapshot};
use crate::metadata::{
    records::{FeatureLevelRecord, METADATA_VERSION_FEATURE},
    version::MetadataVersion,
};

/// File name in the root of `metadata.log.dir`.
pub const BOOTSTRAP_CHECKPOINT_FILE: &str = "bootstrap.checkpoint";

/// Where `format` puts the bootstrap records (docs/decisions.md D18).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootstrapLayout {
    /// `bootstrap.checkpoint` in the root of `metadata.log.dir`, and a 0-0
    /// checkpoint of control records only, written only with
    /// `--standalone`/`--initial-controllers`: what Kafka 4.1.2's
    /// `kafka-storage format` writes (and every Kafka up to 4.1), readable by
    /// every KRaft server.
    BootstrapCheckpoint,
    /// KIP-1170: no `bootstrap.checkpoint`; the 0-0 checkpoint, written in
    /// every mode, holds the control records (SnapshotHeader, KRaftVersion
    /// 1, and Voters unless `--no-initial-controllers`) then the bootstrap
    /// records as one data batch: what Kafka 4.4.0's `kafka-storage format`
    /// writes.
    ZeroCheckpoint,
}

impl BootstrapLayout {
    /// The layout for `metadata_version`: [`Self::ZeroCheckpoint`] from
    /// 4.2-IV0 (level 28, the first level of a Kafka release with KIP-1170),
    /// [`Self::BootstrapCheckpoint`] below, so that a directory at a level
    /// Kafka 4.1 runs is formatted as Kafka 4.1 formats it.
    pub fn for_version(metadata_version: MetadataVersion) -> Self {
        if metadata_version >= MetadataVersion::IBP_4_2_IV0 {
            Self::ZeroCheckpoint
        } else {
            Self::BootstrapCheckpoint
        }
    }
}

/// The bootstrap records of `metadata_version` (each a FeatureLevelRecord
/// v0 in `ApiMessageAndVersion` framing): `metadata.version` first, then
/// [`default_feature_levels`], as Kafka's `Formatter` lists them.
pub fn bootstrap_feature_records(metadata_version: MetadataVersion) -> Vec<Bytes> {
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
    records
}

/// The bytes of `bootstrap.checkpoint` holding `records` (the
/// [`BootstrapLayout::BootstrapCheckpoint`] layout), stamped `timestamp_ms`
/// (ms since the epoch).
///
/// Errors: [`super::LogError::Record`] from encoding.
pub fn encode_bootstrap_checkpoint(records: &[Bytes], timestamp_ms: i64) -> Result<Bytes> {
    encode_snapshot(0, timestamp_ms, 0, &[], records)
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
    fn the_kip_1170_layout_starts_at_4_2_iv0() {
        // D18: Kafka 4.1.2's layout up to its last level, Kafka 4.4.0's from
        // the first level of a release with KIP-1170.
        let at = |level| {
            BootstrapLayout::for_version(
                MetadataVersion::from_feature_level(level).expect("a known level"),
            )
        };
        assert_eq!(at(21), BootstrapLayout::BootstrapCheckpoint);
        assert_eq!(at(27), BootstrapLayout::BootstrapCheckpoint);
        assert_eq!(at(28), BootstrapLayout::ZeroCheckpoint);
        assert_eq!(at(33), BootstrapLayout::ZeroCheckpoint);
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
