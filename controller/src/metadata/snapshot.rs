//! Snapshots of the metadata image (KIP-630): when to take one, its bytes,
//! and loading one back into an image.
//!
//! A snapshot of the image at id (end offset, epoch) is Kafka's
//! `RecordsSnapshotWriter` framing (see `log::snapshot`): SnapshotHeader,
//! KRaftVersion and Voters (the voter set in effect at the end offset), one
//! data batch with [`image_records`], and SnapshotFooter. Owns the policy and
//! the content; it must not write files (the caller does, through the log's
//! `SnapshotWriter`) nor decide what is committed.

use bytes::Bytes;

use super::image::{ImageError, MetadataImage, image_records};
use crate::{
    log::{LogError, OffsetAndEpoch, snapshot::encode_snapshot},
    record::{ControlRecord, KRaftVersionRecord, VotersRecord},
};

/// `metadata.log.max.record.bytes.between.snapshots` default: 20 MiB.
pub const DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS: u64 = 20 * 1024 * 1024;
/// `metadata.log.max.snapshot.interval.ms` default: 1 hour.
pub const DEFAULT_MAX_SNAPSHOT_INTERVAL_MS: u64 = 60 * 60 * 1000;

/// When to take a snapshot (Kafka's `SnapshotGenerator`): after this many
/// bytes of committed batches, or this long after the previous snapshot if
/// anything was committed since, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// `metadata.log.max.record.bytes.between.snapshots` (bytes).
    pub max_bytes_between: u64,
    /// `metadata.log.max.snapshot.interval.ms` (ms); 0 disables the time
    /// trigger, as in Kafka.
    pub max_interval_ms: u64,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self {
            max_bytes_between: DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
            max_interval_ms: DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
        }
    }
}

impl SnapshotPolicy {
    /// Whether to snapshot now, `bytes_since` bytes of batches having been
    /// applied and `ms_since` ms having passed since the previous snapshot
    /// (or the start).
    pub fn due(&self, bytes_since: u64, ms_since: u64) -> bool {
        bytes_since > 0
            && (bytes_since >= self.max_bytes_between
                || (self.max_interval_ms > 0 && ms_since >= self.max_interval_ms))
    }
}

/// The bytes of a snapshot of `image` at id (`image.next_offset()`,
/// `image.last_epoch()`): SnapshotHeader (`last_contained_log_timestamp`
/// `timestamp_ms`), KRaftVersion(`kraft_version`) and `voters` when
/// `kraft_version` is 1 or more (as Kafka writes them), the image's records,
/// SnapshotFooter.
///
/// Errors: [`LogError::Record`] from encoding.
pub fn encode_image_snapshot(
    image: &MetadataImage,
    kraft_version: i16,
    voters: VotersRecord,
    timestamp_ms: i64,
) -> Result<Bytes, LogError> {
    let extras = if kraft_version >= 1 {
        vec![
            ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(kraft_version),
            ),
            ControlRecord::Voters(voters),
        ]
    } else {
        Vec::new()
    };
    encode_snapshot(
        image.last_epoch(),
        timestamp_ms,
        timestamp_ms,
        &extras,
        &image_records(image),
    )
}

/// The id a snapshot of `image` takes.
pub fn image_snapshot_id(image: &MetadataImage) -> OffsetAndEpoch {
    OffsetAndEpoch::new(image.next_offset(), image.last_epoch())
}

/// Loads a whole snapshot `bytes` with id `id` into a new image positioned
/// at the snapshot's end (so the log is replayed from `id.offset` on).
///
/// Errors: [`ImageError`] for a malformed batch or record.
pub fn load_image_snapshot(id: OffsetAndEpoch, bytes: &[u8]) -> Result<MetadataImage, ImageError> {
    let mut image = MetadataImage::default();
    // Records in a snapshot carry snapshot-local offsets from 0; apply them
    // all, then place the image at the snapshot's end.
    image.apply_batches(bytes, i64::MAX)?;
    let mut loaded = MetadataImage::default();
    for value in image_records(&image) {
        loaded.apply_record(0, &value)?;
    }
    loaded.set_position(id.offset, id.epoch);
    loaded.set_broker_record_offsets(id.offset - 1);
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        metadata::records::{
            ControllerEndpoint, FeatureLevelRecord, FramedRecord, METADATA_VERSION_FEATURE,
            RegisterControllerRecord, no_op_record,
        },
        record::{DecodedBatch, iter_batches},
    };

    fn sample_image() -> MetadataImage {
        let mut image = MetadataImage::default();
        let values = [
            FeatureLevelRecord {
                name: METADATA_VERSION_FEATURE.into(),
                feature_level: 27,
            }
            .encode_framed(),
            no_op_record(),
            RegisterControllerRecord {
                controller_id: 1,
                incarnation_id: uuid::Uuid::from_u128(7),
                zk_migration_ready: false,
                endpoints: vec![ControllerEndpoint {
                    name: "CONTROLLER".into(),
                    host: "c-1".into(),
                    port: 9093,
                    security_protocol: 0,
                }],
                features: vec![],
            }
            .encode_framed(),
            FramedRecord {
                api_key: 99,
                version: 0,
                message: Bytes::from_static(&[9, 9]),
            }
            .encode(),
        ];
        for (offset, v) in values.iter().enumerate() {
            image.apply_record(offset as i64, v).expect("applies");
        }
        image.set_position(42, 3);
        image
    }

    #[test]
    fn an_image_survives_the_round_trip_through_a_snapshot() {
        let image = sample_image();
        let id = image_snapshot_id(&image);
        assert_eq!(id, OffsetAndEpoch::new(42, 3));
        let bytes =
            encode_image_snapshot(&image, 1, VotersRecord::default(), 1_000).expect("encodes");
        let loaded = load_image_snapshot(id, &bytes).expect("loads");
        assert_eq!(loaded.features(), image.features());
        assert_eq!(loaded.controllers(), image.controllers());
        assert_eq!(loaded.unknown_records().len(), 1);
        assert_eq!(
            loaded.unknown_records()[0].record,
            image.unknown_records()[0].record
        );
        assert_eq!((loaded.next_offset(), loaded.last_epoch()), (42, 3));
    }

    #[test]
    fn brokers_survive_a_snapshot_with_their_epoch_fencing_and_shutdown_state() {
        use crate::metadata::records::{
            BrokerEndpoint, BrokerRegistrationChangeRecord, RegisterBrokerRecord,
        };
        let mut image = sample_image();
        let register = |id: i32, epoch: i64| RegisterBrokerRecord {
            broker_id: id,
            is_migrating_zk_broker: false,
            incarnation_id: uuid::Uuid::from_u128(id as u128),
            broker_epoch: epoch,
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: format!("b-{id}"),
                port: 9092,
                security_protocol: 0,
            }],
            features: vec![],
            rack: Some("r".into()),
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: vec![uuid::Uuid::from_u128(5)],
            cordoned_log_dirs: None,
        };
        image
            .apply_record(42, &register(1, 42).encode_framed(3))
            .expect("applies");
        image
            .apply_record(43, &register(2, 43).encode_framed(3))
            .expect("applies");
        let unfence = BrokerRegistrationChangeRecord {
            broker_id: 2,
            broker_epoch: 43,
            fenced: -1,
            ..Default::default()
        };
        image
            .apply_record(44, &unfence.encode_framed(0))
            .expect("applies");
        let id = image_snapshot_id(&image);
        let bytes =
            encode_image_snapshot(&image, 1, VotersRecord::default(), 1_000).expect("encodes");
        let loaded = load_image_snapshot(id, &bytes).expect("loads");
        assert_eq!(loaded.brokers().len(), 2);
        for (bid, b) in loaded.brokers() {
            let mut original = image.brokers()[bid].clone();
            original.record_offset = id.offset - 1;
            assert_eq!(b, &original);
        }
        assert!(loaded.brokers()[&1].fenced && !loaded.brokers()[&2].fenced);
        assert_eq!(loaded.brokers()[&2].epoch, 43);
    }

    #[test]
    fn a_snapshot_is_header_kraft_version_and_voters_then_data_then_footer() {
        let bytes =
            encode_image_snapshot(&sample_image(), 1, VotersRecord::default(), 5).expect("encodes");
        let batches: Vec<DecodedBatch> = iter_batches(&bytes, true)
            .map(|b| DecodedBatch::decode(b.expect("batch").1).expect("decodes"))
            .collect();
        assert_eq!(batches.len(), 3);
        let first: Vec<_> = batches[0]
            .control_records()
            .expect("control")
            .iter()
            .map(ControlRecord::record_type)
            .collect();
        assert_eq!(
            first.iter().map(|t| t.name()).collect::<Vec<_>>(),
            ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
        );
        // The data batch holds the image (no-ops are not state): 3 records.
        assert_eq!(batches[1].records.len(), 3);
        assert!(batches.iter().all(|b| b.header.partition_leader_epoch == 3));
        assert_eq!(
            batches[2].control_records().expect("control")[0]
                .record_type()
                .name(),
            "SNAPSHOT_FOOTER"
        );
    }

    #[test]
    fn a_snapshot_is_due_after_enough_bytes_or_time_and_only_if_something_was_applied() {
        let policy = SnapshotPolicy {
            max_bytes_between: 100,
            max_interval_ms: 1_000,
        };
        assert!(!policy.due(0, 10_000));
        assert!(!policy.due(99, 999));
        assert!(policy.due(100, 0));
        assert!(policy.due(1, 1_000));
        let no_timer = SnapshotPolicy {
            max_interval_ms: 0,
            ..policy
        };
        assert!(!no_timer.due(1, u64::MAX));
    }
}
