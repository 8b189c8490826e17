//! The bootstrap metadata of a new cluster and the records its first active
//! controller writes with it (Kafka's `BootstrapMetadata`,
//! `BootstrapDirectory.read` and `ActivationRecordsGenerator`).
//!
//! `bootstrap.checkpoint` (written by `format`, see `log::bootstrap`) holds
//! the feature levels the cluster starts with; Kafka 4.4's `format` writes
//! them as data records of the 0-0 checkpoint instead (KIP-1170), read when
//! `bootstrap.checkpoint` is missing. Nothing reads them from there
//! once the cluster runs: the first leader of an empty log copies them into
//! the metadata log, once, so that every node's image (and every snapshot)
//! has `metadata.version`. Kafka 4.1 writes, in one batch on an empty log:
//!
//! 1. BeginTransactionRecord `Bootstrap records` (when `metadata.version` is
//!    3.6-IV1 or later, which has metadata transactions);
//! 2. every record of `bootstrap.checkpoint` as it is (`metadata.version`
//!    first, then the other feature levels);
//! 3. when `eligible.leader.replicas.version` is 1 or more, the cluster-wide
//!    `min.insync.replicas` ConfigRecord (KIP-966);
//! 4. EndTransactionRecord (with 1.).
//!
//! Without the file, Kafka (and this) uses the latest production
//! `metadata.version` alone (`the default bootstrap`).
//!
//! Owns the reading of the file and the list of records; it must not decide
//! when they are written (the server's event loop does: once, as the leader
//! whose caught-up image has no `metadata.version`).

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::{
    records::{
        CONFIG_RESOURCE_TYPE_BROKER, ConfigRecord, FEATURE_LEVEL_RECORD_API_KEY,
        FeatureLevelRecord, FramedRecord, METADATA_VERSION_FEATURE, RecordsError,
        begin_transaction_record, end_transaction_record,
    },
    version::MetadataVersion,
};
use crate::record::{DecodedBatch, RecordError, iter_batches};

/// File name in the root of `metadata.log.dir` (Kafka's
/// `BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME`).
pub const BOOTSTRAP_FILE: &str = "bootstrap.checkpoint";
/// Name of the bootstrap transaction (Kafka's `ActivationRecordsGenerator`).
pub const BOOTSTRAP_TRANSACTION_NAME: &str = "Bootstrap records";
/// Lowest `metadata.version` level with metadata transactions (3.6-IV1,
/// `MetadataVersion.isMetadataTransactionSupported`).
pub const METADATA_TRANSACTIONS_MIN_LEVEL: i16 = 13;
/// Feature of KIP-966 eligible leader replicas.
pub const ELR_FEATURE: &str = "eligible.leader.replicas.version";
/// Kafka's default of `min.insync.replicas`, written as the cluster-wide
/// value when ELR is enabled at bootstrap (this controller has no such key).
pub const DEFAULT_MIN_INSYNC_REPLICAS: i32 = 1;

/// Errors reading the bootstrap metadata.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The file exists but cannot be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A batch of the file is damaged.
    #[error("{path} is damaged: {source}; re-run `kraft-controller format` on an empty directory")]
    Batch {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: RecordError,
    },
    /// A record of the file is not a framed metadata record.
    #[error("{source_name}: record {index}: {source}")]
    Record {
        /// Where the records came from.
        source_name: String,
        /// Position of the record (0-based).
        index: usize,
        /// What is wrong.
        source: RecordsError,
    },
    /// No `metadata.version` among the records (Kafka: "No FeatureLevelRecord
    /// for metadata.version was found").
    #[error("no FeatureLevelRecord for metadata.version was found in {source_name}")]
    NoMetadataVersion {
        /// Where the records came from.
        source_name: String,
    },
    /// A `metadata.version` level this controller does not implement.
    #[error(
        "{source_name} has metadata.version level {level}, outside what this controller implements: {range}", range = super::version::supported_range()
    )]
    UnknownMetadataVersion {
        /// Where the records came from.
        source_name: String,
        /// The level found.
        level: i16,
    },
}

/// The records a new cluster starts with and the `metadata.version` among
/// them (Kafka's `BootstrapMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapMetadata {
    records: Vec<Bytes>,
    metadata_version: MetadataVersion,
    source: String,
}

impl BootstrapMetadata {
    /// Only `metadata.version` at `version` (Kafka's
    /// `BootstrapMetadata.fromVersion`).
    pub fn from_version(version: MetadataVersion, source: &str) -> Self {
        Self {
            records: vec![
                FeatureLevelRecord {
                    name: METADATA_VERSION_FEATURE.into(),
                    feature_level: version.feature_level(),
                }
                .encode_framed(),
            ],
            metadata_version: version,
            source: source.to_owned(),
        }
    }

    /// The framed records `records` from `origin` (for messages), which must
    /// set `metadata.version` (Kafka's `BootstrapMetadata.fromRecords`).
    ///
    /// Errors: [`BootstrapError::Record`], [`BootstrapError::NoMetadataVersion`],
    /// [`BootstrapError::UnknownMetadataVersion`].
    pub fn from_records(records: Vec<Bytes>, origin: &str) -> Result<Self, BootstrapError> {
        let mut level = None;
        for (index, value) in records.iter().enumerate() {
            let err = |source| BootstrapError::Record {
                source_name: origin.to_owned(),
                index,
                source,
            };
            let framed = FramedRecord::decode(value).map_err(err)?;
            if framed.api_key == FEATURE_LEVEL_RECORD_API_KEY && framed.version == 0 {
                let r = FeatureLevelRecord::decode_message(&framed.message).map_err(err)?;
                if r.name == METADATA_VERSION_FEATURE {
                    level = Some(r.feature_level);
                }
            }
        }
        let level = level.ok_or_else(|| BootstrapError::NoMetadataVersion {
            source_name: origin.to_owned(),
        })?;
        let metadata_version = MetadataVersion::from_feature_level(level).ok_or_else(|| {
            BootstrapError::UnknownMetadataVersion {
                source_name: origin.to_owned(),
                level,
            }
        })?;
        Ok(Self {
            records,
            metadata_version,
            source: origin.to_owned(),
        })
    }

    /// Reads the bootstrap metadata of `log_dir`, as Kafka 4.4's
    /// `BootstrapDirectory.read`: the data records of `bootstrap.checkpoint`
    /// when it exists (the layout of Kafka up to 4.3 and of this `format`);
    /// otherwise those of `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`
    /// when it holds a `metadata.version` (KIP-1170: Kafka 4.4's
    /// `kafka-storage format` writes the bootstrap records there and no
    /// `bootstrap.checkpoint`); otherwise the default bootstrap (the latest
    /// production `metadata.version`). A 0-0 checkpoint with control records
    /// only (this `format`'s `--standalone`/`--initial-controllers`) has no
    /// bootstrap records.
    ///
    /// Errors: [`BootstrapError`]; a `metadata.version` level outside what
    /// this controller implements is [`BootstrapError::UnknownMetadataVersion`]
    /// naming the file and the level, so the node refuses to start before it
    /// opens (and writes) anything.
    pub fn read(log_dir: &Path) -> Result<Self, BootstrapError> {
        let path = log_dir.join(BOOTSTRAP_FILE);
        if let Some(records) = data_records(&path)? {
            return Self::from_records(
                records,
                &format!("the binary bootstrap file {}", path.display()),
            );
        }
        let checkpoint = crate::log::partition_dir(log_dir).join(
            crate::log::snapshot::snapshot_file_name(crate::log::snapshot::BOOTSTRAP_SNAPSHOT_ID),
        );
        match data_records(&checkpoint)? {
            Some(records) if !records.is_empty() => Self::from_records(
                records,
                &format!("the bootstrap checkpoint {}", checkpoint.display()),
            ),
            _ => Ok(Self::from_version(
                MetadataVersion::LATEST_PRODUCTION,
                "the default bootstrap",
            )),
        }
    }

    /// The `metadata.version` the cluster starts at.
    pub fn metadata_version(&self) -> MetadataVersion {
        self.metadata_version
    }

    /// The bootstrap records, framed, in order.
    pub fn records(&self) -> &[Bytes] {
        &self.records
    }

    /// Where the records came from, for logs.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The level of feature `name` in the records (0 when absent, as Kafka's
    /// `BootstrapMetadata.featureLevel`).
    pub fn feature_level(&self, name: &str) -> i16 {
        self.records
            .iter()
            .filter_map(|v| FramedRecord::decode(v).ok())
            .filter(|f| f.api_key == FEATURE_LEVEL_RECORD_API_KEY && f.version == 0)
            .filter_map(|f| FeatureLevelRecord::decode_message(&f.message).ok())
            .filter(|r| r.name == name)
            .map(|r| r.feature_level)
            .next_back()
            .unwrap_or(0)
    }

    /// What the first active controller of an empty log appends, in one
    /// batch (Kafka's `ActivationRecordsGenerator.recordsForEmptyLog` without
    /// an aborted transaction to clean up; see the module doc).
    pub fn activation_records(&self, default_min_isr: i32) -> Vec<Bytes> {
        let transactional =
            self.metadata_version.feature_level() >= METADATA_TRANSACTIONS_MIN_LEVEL;
        let mut out = Vec::with_capacity(self.records.len() + 3);
        if transactional {
            out.push(begin_transaction_record(Some(BOOTSTRAP_TRANSACTION_NAME)));
        }
        out.extend(self.records.iter().cloned());
        if self.feature_level(ELR_FEATURE) > 0 {
            out.push(
                ConfigRecord {
                    resource_type: CONFIG_RESOURCE_TYPE_BROKER,
                    resource_name: String::new(),
                    name: "min.insync.replicas".into(),
                    value: Some(default_min_isr.to_string()),
                }
                .encode_framed(),
            );
        }
        if transactional {
            out.push(end_transaction_record());
        }
        out
    }
}

/// The data records (not the control records) of the checkpoint file at
/// `path`, in order; `None` when there is no such file.
///
/// Errors: [`BootstrapError::Io`], [`BootstrapError::Batch`].
fn data_records(path: &Path) -> Result<Option<Vec<Bytes>>, BootstrapError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(BootstrapError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let damaged = |source| BootstrapError::Batch {
        path: path.to_path_buf(),
        source,
    };
    let mut records = Vec::new();
    for item in iter_batches(&bytes, true) {
        let (header, batch) = item.map_err(damaged)?;
        if header.is_control() {
            continue;
        }
        let decoded = DecodedBatch::decode(batch).map_err(damaged)?;
        records.extend(decoded.records.into_iter().filter_map(|r| r.value));
    }
    Ok(Some(records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        log::bootstrap::{
            bootstrap_feature_records, encode_bootstrap_checkpoint, write_bootstrap_checkpoint,
        },
        metadata::records::CONFIG_RECORD_API_KEY,
    };

    fn level(name: &str, level: i16) -> Bytes {
        FeatureLevelRecord {
            name: name.into(),
            feature_level: level,
        }
        .encode_framed()
    }

    /// Writes a 0-0 checkpoint holding `records` as data, as Kafka 4.4's
    /// `kafka-storage format` does (KIP-1170), and no `bootstrap.checkpoint`.
    fn write_kip_1170_checkpoint(log_dir: &Path, records: &[Bytes]) -> PathBuf {
        let partition = crate::log::partition_dir(log_dir);
        std::fs::create_dir_all(&partition).expect("partition dir");
        let bytes = crate::log::snapshot::encode_snapshot(0, 0, 0, &[], records).expect("encodes");
        let path = partition.join(crate::log::snapshot::snapshot_file_name(
            crate::log::OffsetAndEpoch::new(0, 0),
        ));
        std::fs::write(&path, &bytes).expect("writes");
        path
    }

    #[test]
    fn without_bootstrap_checkpoint_the_records_of_the_0_0_checkpoint_are_the_bootstrap() {
        // KIP-1170: Kafka 4.4's format at --release-version 4.1-IV1.
        let dir = tempfile::tempdir().expect("tempdir");
        write_kip_1170_checkpoint(
            dir.path(),
            &[level(METADATA_VERSION_FEATURE, 27), level(ELR_FEATURE, 1)],
        );
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("reads");
        assert_eq!(bootstrap.metadata_version().feature_level(), 27);
        assert_eq!(bootstrap.feature_level(ELR_FEATURE), 1);
        assert!(
            bootstrap
                .source()
                .contains("00000000000000000000-0000000000.checkpoint")
        );
    }

    #[test]
    fn a_0_0_checkpoint_with_control_records_only_gives_the_default_bootstrap() {
        // This format's --standalone: KRaftVersion and Voters only.
        let dir = tempfile::tempdir().expect("tempdir");
        write_kip_1170_checkpoint(dir.path(), &[]);
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("reads");
        assert_eq!(
            bootstrap.metadata_version(),
            MetadataVersion::LATEST_PRODUCTION
        );
        assert_eq!(bootstrap.source(), "the default bootstrap");
    }

    #[test]
    fn a_metadata_version_this_controller_does_not_implement_is_refused_naming_file_and_level() {
        // Kafka 4.4.0's format writes 4.4-IV2 (level 33) by default: run.
        let dir = tempfile::tempdir().expect("tempdir");
        write_kip_1170_checkpoint(dir.path(), &[level(METADATA_VERSION_FEATURE, 33)]);
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("level 33 is implemented");
        assert_eq!(bootstrap.metadata_version().feature_level(), 33);
        // 4.5-IV0 (34), Kafka 4.4.0's unstable latestTesting: refused.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_kip_1170_checkpoint(dir.path(), &[level(METADATA_VERSION_FEATURE, 34)]);
        let err = BootstrapMetadata::read(dir.path()).expect_err("level 34 is refused");
        let text = err.to_string();
        assert!(text.contains("level 34"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("3.3-IV3 (7) to 4.4-IV2 (33)"), "{text}");
    }

    #[test]
    fn bootstrap_checkpoint_wins_over_the_0_0_checkpoint() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_kip_1170_checkpoint(dir.path(), &[level(METADATA_VERSION_FEATURE, 33)]);
        let bytes = encode_bootstrap_checkpoint(
            &bootstrap_feature_records(MetadataVersion::LATEST_PRODUCTION),
            1,
        )
        .expect("encodes");
        write_bootstrap_checkpoint(dir.path(), &bytes).expect("writes");
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("reads");
        assert_eq!(bootstrap.metadata_version().feature_level(), 27);
    }

    #[test]
    fn the_first_leader_writes_the_bootstrap_records_in_a_transaction_with_the_elr_min_isr() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bytes = encode_bootstrap_checkpoint(
            &bootstrap_feature_records(MetadataVersion::LATEST_PRODUCTION),
            1,
        )
        .expect("encodes");
        write_bootstrap_checkpoint(dir.path(), &bytes).expect("writes");
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("reads");
        assert_eq!(bootstrap.metadata_version().feature_level(), 27);
        assert_eq!(bootstrap.feature_level(ELR_FEATURE), 1);
        let records = bootstrap.activation_records(DEFAULT_MIN_INSYNC_REPLICAS);
        let keys: Vec<u32> = records
            .iter()
            .map(|r| FramedRecord::decode(r).expect("framed").api_key)
            .collect();
        // Begin, metadata.version, ELR, group, transaction, ConfigRecord, End:
        // what Kafka 4.1.2's first active controller writes at 4.1-IV1.
        assert_eq!(keys, vec![23, 12, 12, 12, 12, CONFIG_RECORD_API_KEY, 24]);
        assert_eq!(records[1], level(METADATA_VERSION_FEATURE, 27));
        assert_eq!(records[2], level(ELR_FEATURE, 1));
        assert_eq!(
            records[5],
            ConfigRecord {
                resource_type: 4,
                resource_name: String::new(),
                name: "min.insync.replicas".into(),
                value: Some("1".into()),
            }
            .encode_framed()
        );
    }

    #[test]
    fn without_a_bootstrap_file_the_latest_production_metadata_version_is_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bootstrap = BootstrapMetadata::read(dir.path()).expect("default");
        assert_eq!(
            bootstrap.metadata_version(),
            MetadataVersion::LATEST_PRODUCTION
        );
        assert_eq!(bootstrap.source(), "the default bootstrap");
        assert_eq!(bootstrap.activation_records(1).len(), 3);
    }

    #[test]
    fn an_old_metadata_version_bootstraps_without_a_transaction() {
        let old = MetadataVersion::parse("3.6-IV0").expect("known");
        let records = BootstrapMetadata::from_version(old, "test").activation_records(1);
        assert_eq!(records, vec![level(METADATA_VERSION_FEATURE, 12)]);
    }

    #[test]
    fn bootstrap_records_without_metadata_version_or_with_an_unknown_one_are_refused() {
        let err = BootstrapMetadata::from_records(vec![level("group.version", 1)], "a file")
            .expect_err("no metadata.version");
        assert_eq!(
            err.to_string(),
            "no FeatureLevelRecord for metadata.version was found in a file"
        );
        let err =
            BootstrapMetadata::from_records(vec![level(METADATA_VERSION_FEATURE, 99)], "a file")
                .expect_err("level 99");
        assert!(err.to_string().contains("level 99"), "{err}");
        let err = BootstrapMetadata::from_records(vec![Bytes::from_static(&[7])], "a file")
            .expect_err("frame version 7");
        assert!(err.to_string().contains("record 0"), "{err}");
    }

    #[test]
    fn a_damaged_bootstrap_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bytes = encode_bootstrap_checkpoint(
            &bootstrap_feature_records(MetadataVersion::LATEST_PRODUCTION),
            1,
        )
        .expect("encodes")
        .to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(dir.path().join(BOOTSTRAP_FILE), &bytes).expect("writes");
        let err = BootstrapMetadata::read(dir.path()).expect_err("damaged");
        assert!(err.to_string().contains(BOOTSTRAP_FILE), "{err}");
    }
}
