//! The metadata image: the state of the committed metadata records, applied
//! in offset order (Kafka's `MetadataImage`, reduced to what a controller-only
//! quorum holds).
//!
//! | record | effect |
//! |---|---|
//! | FeatureLevelRecord (12) | sets a finalized feature level; level 0 removes it (Kafka's `FeatureControlManager`); one naming `kraft.version` is skipped (KAFKA-18979: that level is the Raft layer's) |
//! | RegisterControllerRecord (27) | replaces the registration of its controller id (KIP-919) |
//! | UnregisterControllerRecord (29) | removes the registration of its controller id (KIP-1312, Kafka 4.4; an unknown id is an error, as Kafka's replay throws) |
//! | broker records (0, 1, 7, 8, 17) | broker registrations, fencing, controlled shutdown (`metadata::brokers`) |
//! | topic records (2, 3, 5, 9, 28) | topics, partitions, leaders, ISRs (`metadata::topics`) |
//! | ConfigRecord (4) | a resource's dynamic config key set or (null value) deleted (`metadata::configs`) |
//! | ProducerIdsRecord (15) | the next producer id to hand out (Kafka's `ProducerIdsImage`) |
//! | AccessControlEntryRecord (18), RemoveAccessControlEntryRecord (19) | adds or removes an ACL by id (Kafka's `AclControlManager.replay`; removing an unknown id is an error) |
//! | NoOpRecord (20) | counted |
//! | Begin/End/AbortTransactionRecord (23/24/25) | counted, not state (see below) |
//! | any other type or version | kept untouched, with its offset, so a newer writer's records survive an older reader (and its snapshots) |
//!
//! Metadata transactions (KIP-868): the only transaction written here is the
//! first leader's bootstrap, in one batch, which Raft commits whole; records
//! between the markers are applied as they come. A transaction spanning
//! batches (another writer's) would be applied before its end marker, not
//! buffered as Kafka's `MetadataLoader` does.
//!
//! Control batches (leader changes, voter sets) are the Raft engine's and are
//! skipped here. Owns the image and the application of records; it must not
//! decide what is committed (callers pass only committed batches or give the
//! high watermark) and must not write to the log.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::brokers::{
    BrokerRecordError, BrokerRegistration, apply_broker_record, is_broker_record,
};
use super::configs::ConfigsImage;
use super::records::{
    ABORT_TRANSACTION_RECORD_API_KEY, ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
    AccessControlEntryRecord, BEGIN_TRANSACTION_RECORD_API_KEY, CONFIG_RECORD_API_KEY,
    ConfigRecord, ControllerEndpoint, ControllerFeature, END_TRANSACTION_RECORD_API_KEY,
    FEATURE_LEVEL_RECORD_API_KEY, FeatureLevelRecord, FramedRecord, METADATA_VERSION_FEATURE,
    NO_OP_RECORD_API_KEY, PRODUCER_IDS_RECORD_API_KEY, ProducerIdsRecord,
    REGISTER_CONTROLLER_RECORD_API_KEY, REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
    REMOVE_TOPIC_RECORD_API_KEY, RecordsError, RegisterControllerRecord, RemoveTopicRecord,
    UNREGISTER_CONTROLLER_RECORD_API_KEY, UnregisterControllerRecord,
    decode_remove_access_control_entry, partition_record_version, register_broker_record_version,
};
use super::topics::{TopicRecordError, TopicsImage, is_topic_record};
use crate::{
    log::{LogError, ReplicatedLog},
    record::{DecodedBatch, RecordError, iter_batches},
};

/// Most bytes read from the log at a time while applying (bytes).
const READ_CHUNK_BYTES: usize = 1024 * 1024;

/// Errors applying records to the image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// A FeatureLevelRecord sets `metadata.version` to a level this
    /// controller does not implement (level 0, which would remove it, too):
    /// the node stops rather than serve records it cannot read (issue 22).
    #[error(
        "metadata record at offset {offset} sets metadata.version level {level}, outside what this controller implements: {range}", range = super::version::supported_range()
    )]
    UnsupportedMetadataVersion {
        /// Offset of the record.
        offset: i64,
        /// The level found.
        level: i16,
    },
    /// A metadata record of a known type could not be decoded.
    #[error("metadata record at offset {offset}: {source}")]
    Record {
        /// Offset of the record.
        offset: i64,
        /// What was wrong.
        source: RecordsError,
    },
    /// A broker record that does not fit the image (Kafka's replay throws).
    #[error("broker record at offset {offset}: {source}")]
    Broker {
        /// Offset of the record.
        offset: i64,
        /// What was wrong.
        source: BrokerRecordError,
    },
    /// A topic record that does not fit the image (Kafka's replay throws).
    #[error("topic record at offset {offset}: {source}")]
    Topic {
        /// Offset of the record.
        offset: i64,
        /// What was wrong.
        source: TopicRecordError,
    },
    /// An UnregisterControllerRecord of a controller the image holds no
    /// registration for (Kafka 4.4's `ClusterControlManager.replay` throws:
    /// "no controller registration found for that id").
    #[error(
        "UnregisterControllerRecord at offset {offset}: no registration of controller {controller_id}"
    )]
    UnknownController {
        /// Offset of the record.
        offset: i64,
        /// The controller id it names.
        controller_id: i32,
    },
    /// A RemoveAccessControlEntryRecord of an ACL the image does not hold
    /// (Kafka's replay throws).
    #[error("RemoveAccessControlEntryRecord at offset {offset}: no acl with id {id}")]
    UnknownAcl {
        /// Offset of the record.
        offset: i64,
        /// The id it names.
        id: uuid::Uuid,
    },
    /// A data record without a value.
    #[error("metadata record at offset {offset} has no value")]
    MissingValue {
        /// Offset of the record.
        offset: i64,
    },
    /// A batch could not be decoded.
    #[error("decoding a batch of the metadata log: {0}")]
    Batch(#[from] RecordError),
    /// The log could not be read.
    #[error("reading the metadata log: {0}")]
    Log(#[from] LogError),
}

/// A registered controller (KIP-919), as the latest RegisterControllerRecord
/// of its id says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRegistration {
    /// Random id of the registering process run.
    pub incarnation_id: uuid::Uuid,
    /// Whether it is ready for a ZooKeeper migration (always false here).
    pub zk_migration_ready: bool,
    /// Listeners.
    pub endpoints: Vec<ControllerEndpoint>,
    /// Supported feature ranges.
    pub supported_features: Vec<ControllerFeature>,
}

/// A record the image does not interpret, kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRecord {
    /// Offset it was committed at.
    pub offset: i64,
    /// The framed record (api key, version, message bytes).
    pub record: FramedRecord,
}

/// The metadata image. Starts empty at offset 0 (or at a snapshot's end
/// offset); [`Self::next_offset`] is the offset after the last record applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    features: BTreeMap<String, i16>,
    controllers: BTreeMap<i32, ControllerRegistration>,
    brokers: BTreeMap<i32, BrokerRegistration>,
    topics: TopicsImage,
    next_producer_id: Option<i64>,
    configs: ConfigsImage,
    acls: crate::acl::AclSet,
    no_op_records: u64,
    transaction_markers: u64,
    unknown: Vec<UnknownRecord>,
    next_offset: i64,
    last_epoch: i32,
    applied_bytes: u64,
}

impl MetadataImage {
    /// An empty image whose next record is at `offset` (the log start offset).
    pub fn starting_at(offset: i64) -> Self {
        Self {
            next_offset: offset,
            ..Self::default()
        }
    }

    /// Finalized feature levels by name (`metadata.version`, …).
    pub fn features(&self) -> &BTreeMap<String, i16> {
        &self.features
    }

    /// The finalized level of `name`, if set.
    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.features.get(name).copied()
    }

    /// Registered controllers by id.
    pub fn controllers(&self) -> &BTreeMap<i32, ControllerRegistration> {
        &self.controllers
    }

    /// Registered brokers by id.
    pub fn brokers(&self) -> &BTreeMap<i32, BrokerRegistration> {
        &self.brokers
    }

    /// The dynamic configurations (ConfigRecords) by resource.
    pub fn configs(&self) -> &ConfigsImage {
        &self.configs
    }

    /// The first producer id of the next block to hand out, `None` before
    /// any ProducerIdsRecord (Kafka's `ProducerIdsImage.EMPTY`, -1).
    pub fn next_producer_id(&self) -> Option<i64> {
        self.next_producer_id
    }

    /// Topics and their partitions.
    pub fn topics(&self) -> &TopicsImage {
        &self.topics
    }

    /// The ACLs by id (`crate::acl`).
    pub fn acls(&self) -> &crate::acl::AclSet {
        &self.acls
    }

    /// Sets every broker's record offset to `offset` (a loaded snapshot's
    /// last contained offset, as Kafka's replay of a snapshot passes it).
    pub(crate) fn set_broker_record_offsets(&mut self, offset: i64) {
        for b in self.brokers.values_mut() {
            b.record_offset = offset;
        }
    }

    /// NoOpRecords applied (only since the image started: a snapshot does not
    /// carry them).
    pub fn no_op_records(&self) -> u64 {
        self.no_op_records
    }

    /// Metadata transaction markers (Begin/End/AbortTransactionRecord)
    /// applied since the image started; like no-ops, not state.
    pub fn transaction_markers(&self) -> u64 {
        self.transaction_markers
    }

    /// Records of types or versions this image does not interpret, in offset
    /// order.
    pub fn unknown_records(&self) -> &[UnknownRecord] {
        &self.unknown
    }

    /// The offset after the last record applied.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Leader epoch of the last batch applied (0 before any): with
    /// [`Self::next_offset`], the id a snapshot of this image takes.
    pub fn last_epoch(&self) -> i32 {
        self.last_epoch
    }

    /// Bytes of log batches applied since this image was created (the
    /// measure `metadata.log.max.record.bytes.between.snapshots` counts).
    pub fn applied_bytes(&self) -> u64 {
        self.applied_bytes
    }

    /// Sets the offset and epoch a loaded snapshot ends at.
    pub(crate) fn set_position(&mut self, next_offset: i64, last_epoch: i32) {
        self.next_offset = next_offset;
        self.last_epoch = last_epoch;
    }

    /// Applies one framed metadata record value committed at `offset`.
    ///
    /// Errors: [`ImageError::Record`] if the frame or a known record type is
    /// malformed (the image is unchanged then).
    pub fn apply_record(&mut self, offset: i64, value: &[u8]) -> Result<(), ImageError> {
        let err = |source| ImageError::Record { offset, source };
        let framed = FramedRecord::decode(value).map_err(err)?;
        match (framed.api_key, framed.version) {
            (FEATURE_LEVEL_RECORD_API_KEY, 0) => {
                let r = FeatureLevelRecord::decode_message(&framed.message).map_err(err)?;
                if r.name == METADATA_VERSION_FEATURE
                    && super::version::MetadataVersion::from_feature_level(r.feature_level)
                        .is_none()
                {
                    return Err(ImageError::UnsupportedMetadataVersion {
                        offset,
                        level: r.feature_level,
                    });
                }
                if r.name == crate::raft::membership::KRAFT_VERSION_FEATURE {
                    // KAFKA-18979: kraft.version is the Raft layer's (its
                    // KRaftVersion control records); such a record is
                    // skipped, as Kafka's FeatureControlManager.replay does.
                } else if r.feature_level == 0 {
                    self.features.remove(&r.name);
                } else {
                    self.features.insert(r.name, r.feature_level);
                }
            }
            (REGISTER_CONTROLLER_RECORD_API_KEY, 0) => {
                let r = RegisterControllerRecord::decode_message(&framed.message).map_err(err)?;
                self.controllers.insert(
                    r.controller_id,
                    ControllerRegistration {
                        incarnation_id: r.incarnation_id,
                        zk_migration_ready: r.zk_migration_ready,
                        endpoints: r.endpoints,
                        supported_features: r.features,
                    },
                );
            }
            (UNREGISTER_CONTROLLER_RECORD_API_KEY, 0) => {
                // KIP-1312: the registration is gone, and with it from every
                // snapshot of this image.
                let r = UnregisterControllerRecord::decode_message(&framed.message).map_err(err)?;
                if self.controllers.remove(&r.controller_id).is_none() {
                    return Err(ImageError::UnknownController {
                        offset,
                        controller_id: r.controller_id,
                    });
                }
            }
            (key, version) if is_broker_record(key, version) => {
                apply_broker_record(&mut self.brokers, offset, &framed)
                    .map_err(|source| ImageError::Broker { offset, source })?;
            }
            (key, version) if is_topic_record(key, version) => {
                // Kafka's MetadataDelta replays a RemoveTopicRecord into the
                // configs too: the topic's configs go with it.
                let removed = (key == REMOVE_TOPIC_RECORD_API_KEY)
                    .then(|| RemoveTopicRecord::decode_message(&framed.message).ok())
                    .flatten()
                    .and_then(|r| self.topics.get(&r.topic_id).map(|t| t.name.clone()));
                self.topics
                    .apply(&framed)
                    .map_err(|source| ImageError::Topic { offset, source })?;
                if let Some(name) = removed {
                    self.configs
                        .remove_resource(super::configs::CONFIG_RESOURCE_TYPE_TOPIC, &name);
                }
            }
            (CONFIG_RECORD_API_KEY, 0) => {
                let r = ConfigRecord::decode_message(&framed.message).map_err(err)?;
                self.configs.apply(&r);
            }
            (PRODUCER_IDS_RECORD_API_KEY, 0) => {
                let r = ProducerIdsRecord::decode_message(&framed.message).map_err(err)?;
                self.next_producer_id = Some(r.next_producer_id);
            }
            (ACCESS_CONTROL_ENTRY_RECORD_API_KEY, 0) => {
                let r = AccessControlEntryRecord::decode_message(&framed.message).map_err(err)?;
                self.acls
                    .insert(r.id, crate::acl::StandardAcl::from_record(&r));
            }
            (REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY, 0) => {
                let id = decode_remove_access_control_entry(&framed.message).map_err(err)?;
                if self.acls.remove(&id).is_none() {
                    return Err(ImageError::UnknownAcl { offset, id });
                }
            }
            (NO_OP_RECORD_API_KEY, _) => self.no_op_records += 1,
            (
                BEGIN_TRANSACTION_RECORD_API_KEY
                | END_TRANSACTION_RECORD_API_KEY
                | ABORT_TRANSACTION_RECORD_API_KEY,
                0,
            ) => self.transaction_markers += 1,
            _ => self.unknown.push(UnknownRecord {
                offset,
                record: framed,
            }),
        }
        self.next_offset = self.next_offset.max(offset.saturating_add(1));
        Ok(())
    }

    /// Applies the batches of `batches` (concatenated RecordBatch v2) that lie
    /// at or above [`Self::next_offset`] and end below `high_watermark`;
    /// control batches only move the next offset. Returns the number of
    /// metadata records applied.
    ///
    /// Errors: [`ImageError`]; batches before the bad one stay applied.
    pub fn apply_batches(
        &mut self,
        batches: &[u8],
        high_watermark: i64,
    ) -> Result<u64, ImageError> {
        let mut applied = 0;
        for item in iter_batches(batches, false) {
            let (header, bytes) = item?;
            if header.last_offset() >= high_watermark {
                break;
            }
            if header.last_offset() < self.next_offset {
                continue;
            }
            if !header.is_control() {
                let batch = DecodedBatch::decode(bytes)?;
                let from = self.next_offset;
                for record in batch.records.iter().filter(|r| r.offset >= from) {
                    let value = record.value.as_ref().ok_or(ImageError::MissingValue {
                        offset: record.offset,
                    })?;
                    self.apply_record(record.offset, value)?;
                    applied += 1;
                }
            }
            self.next_offset = header.next_offset();
            self.last_epoch = header.partition_leader_epoch;
            self.applied_bytes += header.size_in_bytes() as u64;
        }
        Ok(applied)
    }

    /// Reads `log` from [`Self::next_offset`] and applies every batch below
    /// `high_watermark` (the committed ones): what the server does on each
    /// `Command::Committed`, and how a restart replays its log into the
    /// image. Returns the number of metadata records applied.
    ///
    /// Errors: [`ImageError`] (a log read, or a record, failed).
    pub fn apply_log<L: ReplicatedLog + ?Sized>(
        &mut self,
        log: &L,
        high_watermark: i64,
    ) -> Result<u64, ImageError> {
        let mut applied = 0;
        if self.next_offset < log.start_offset() {
            // Nothing below the log start can be read any more; the caller
            // must load a snapshot to go further back.
            self.next_offset = log.start_offset();
        }
        let end = high_watermark.min(log.end_offset().offset);
        while self.next_offset < end {
            let before = self.next_offset;
            let info = log.read(self.next_offset, READ_CHUNK_BYTES)?;
            applied += self.apply_batches(&info.records, high_watermark)?;
            if self.next_offset == before {
                break;
            }
        }
        Ok(applied)
    }
}

/// The framed record values an image is made of, in a canonical order:
/// feature levels (`metadata.version` first, as Kafka's `FeaturesImage`
/// writes it: a reader needs it before anything else), the others by name,
/// controller registrations by id, broker registrations by id (at the
/// RegisterBrokerRecord version of the image's `metadata.version`, as
/// Kafka's `ClusterImage` writes them), topics by id each with its partitions
/// (at the PartitionRecord version of the `metadata.version`, as Kafka's
/// `TopicsImage` writes them), the configurations by resource and key, the
/// next producer id (as Kafka's `ProducerIdsImage` writes it), then unknown
/// records in offset order
/// (no-ops and transaction markers are not state). Applying them to an empty
/// image gives an image equal to this one but for the no-op count and the
/// offsets: what a snapshot of the image holds.
pub fn image_records(image: &MetadataImage) -> Vec<Bytes> {
    let mut out = Vec::new();
    let metadata_version_first = image
        .features
        .iter()
        .filter(|(name, _)| name.as_str() == METADATA_VERSION_FEATURE)
        .chain(
            image
                .features
                .iter()
                .filter(|(name, _)| name.as_str() != METADATA_VERSION_FEATURE),
        );
    for (name, level) in metadata_version_first {
        out.push(
            FeatureLevelRecord {
                name: name.clone(),
                feature_level: *level,
            }
            .encode_framed(),
        );
    }
    for (id, c) in &image.controllers {
        out.push(
            RegisterControllerRecord {
                controller_id: *id,
                incarnation_id: c.incarnation_id,
                zk_migration_ready: c.zk_migration_ready,
                endpoints: c.endpoints.clone(),
                features: c.supported_features.clone(),
            }
            .encode_framed(),
        );
    }
    let broker_version =
        register_broker_record_version(image.feature_level(METADATA_VERSION_FEATURE).unwrap_or(0));
    for (id, b) in &image.brokers {
        out.push(b.to_record(*id).encode_framed(broker_version));
    }
    out.extend(image.topics.records(partition_record_version(
        image.feature_level(METADATA_VERSION_FEATURE).unwrap_or(0),
    )));
    out.extend(image.configs.records());
    if let Some(next_producer_id) = image.next_producer_id {
        // Kafka's ProducerIdsImage.write: no broker, no epoch.
        out.push(
            ProducerIdsRecord {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id,
            }
            .encode_framed(),
        );
    }
    // Kafka's MetadataImage.write: ACLs after producer ids.
    for (id, acl) in &image.acls {
        out.push(acl.to_record(*id).encode_framed());
    }
    for u in &image.unknown {
        out.push(u.record.encode());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        log::MemoryLog,
        metadata::records::{METADATA_VERSION_FEATURE, no_op_record},
        record::encode_data_batch,
    };

    fn registration(id: i32, port: u16) -> Bytes {
        RegisterControllerRecord {
            controller_id: id,
            incarnation_id: uuid::Uuid::from_u128(id as u128),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: format!("c-{id}"),
                port,
                security_protocol: 0,
            }],
            features: vec![],
        }
        .encode_framed()
    }

    fn level(name: &str, level: i16) -> Bytes {
        FeatureLevelRecord {
            name: name.into(),
            feature_level: level,
        }
        .encode_framed()
    }

    /// A record of a type unknown here (api key 99).
    fn unknown() -> Bytes {
        FramedRecord {
            api_key: 99,
            version: 3,
            message: Bytes::from_static(&[1, 2, 3]),
        }
        .encode()
    }

    #[test]
    fn records_set_features_register_controllers_count_no_ops_and_keep_unknown_types() {
        let mut image = MetadataImage::default();
        let values = [
            level(METADATA_VERSION_FEATURE, 26),
            registration(1, 9093),
            no_op_record(),
            unknown(),
            level(METADATA_VERSION_FEATURE, 27),
            registration(1, 9094),
            level("group.version", 1),
            level("group.version", 0),
        ];
        for (offset, v) in values.iter().enumerate() {
            image.apply_record(offset as i64, v).expect("applies");
        }
        assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(27));
        assert_eq!(image.feature_level("group.version"), None);
        assert_eq!(image.controllers()[&1].endpoints[0].port, 9094);
        assert_eq!(image.no_op_records(), 1);
        assert_eq!(image.unknown_records().len(), 1);
        assert_eq!(image.unknown_records()[0].offset, 3);
        assert_eq!(image.unknown_records()[0].record.encode(), unknown());
        assert_eq!(image.next_offset(), 8);
    }

    // KAFKA-18979: kraft.version is the Raft layer's (KRaftVersion control
    // records); a FeatureLevelRecord naming it (written by Kafka 4.0.0 when
    // `kafka-features upgrade --release-version` named it) is skipped, so
    // ApiVersions reports one kraft.version and snapshots drop the record.
    #[test]
    fn a_feature_level_record_for_kraft_version_is_skipped_and_api_versions_reports_the_raft_level()
    {
        let mut image = MetadataImage::default();
        for (offset, v) in [
            level(METADATA_VERSION_FEATURE, 27),
            level("kraft.version", 1),
        ]
        .iter()
        .enumerate()
        {
            image.apply_record(offset as i64, v).expect("applies");
        }
        assert_eq!(image.feature_level("kraft.version"), None);
        // Finalized kraft.version levels in ApiVersions for a Raft level
        // (level 0 is left out, as Kafka leaves level-0 features out).
        let finalized = |raft_level| -> Vec<i16> {
            crate::metadata::cluster::api_versions(3, &image, raft_level)
                .finalized_features
                .iter()
                .filter(|f| f.name.as_str() == "kraft.version")
                .map(|f| f.max_version_level)
                .collect()
        };
        assert_eq!(finalized(0), Vec::<i16>::new(), "a static quorum");
        assert_eq!(finalized(1), [1]);
    }

    #[test]
    fn acl_records_add_and_remove_acls_survive_a_rebuild_and_an_unknown_removal_fails() {
        use crate::metadata::records::remove_access_control_entry_record;
        let acl = crate::acl::StandardAcl {
            resource_type: crate::acl::resource_type::CLUSTER,
            resource_name: crate::acl::CLUSTER_NAME.into(),
            pattern_type: crate::acl::pattern_type::LITERAL,
            principal: "User:broker".into(),
            host: "*".into(),
            operation: crate::acl::operation::CLUSTER_ACTION,
            permission_type: crate::acl::permission::ALLOW,
        };
        let (a, b) = (uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2));
        let mut image = MetadataImage::default();
        for (offset, v) in [
            acl.to_record(a).encode_framed(),
            acl.to_record(b).encode_framed(),
            remove_access_control_entry_record(a),
        ]
        .iter()
        .enumerate()
        {
            image.apply_record(offset as i64, v).expect("applies");
        }
        assert_eq!(image.acls().len(), 1);
        assert_eq!(image.acls()[&b], acl);
        let mut rebuilt = MetadataImage::default();
        for v in image_records(&image) {
            rebuilt.apply_record(0, &v).expect("applies");
        }
        assert_eq!(rebuilt.acls(), image.acls());
        let err = image
            .apply_record(9, &remove_access_control_entry_record(a))
            .expect_err("no such acl");
        assert!(err.to_string().contains("offset 9"), "{err}");
    }

    #[test]
    fn a_malformed_known_record_is_an_error_naming_its_offset() {
        let mut image = MetadataImage::default();
        let bad = [0x01, 0x0c, 0x00, 0x11, b'm'];
        let err = image.apply_record(7, &bad).expect_err("truncated");
        assert!(err.to_string().contains("offset 7"), "{err}");
        assert_eq!(image, MetadataImage::default());
    }

    #[test]
    fn the_image_records_rebuild_an_equal_image() {
        let mut image = MetadataImage::default();
        let values = [
            level(METADATA_VERSION_FEATURE, 27),
            registration(2, 1),
            registration(1, 2),
            unknown(),
        ];
        for (offset, v) in values.iter().enumerate() {
            image.apply_record(offset as i64, v).expect("applies");
        }
        let mut rebuilt = MetadataImage::default();
        for v in image_records(&image) {
            rebuilt.apply_record(0, &v).expect("applies");
        }
        assert_eq!(rebuilt.features(), image.features());
        assert_eq!(rebuilt.controllers(), image.controllers());
        assert_eq!(
            rebuilt.unknown_records()[0].record,
            image.unknown_records()[0].record
        );
    }

    #[test]
    fn only_batches_below_the_high_watermark_are_applied_and_each_once() {
        let mut log = MemoryLog::new();
        for values in [
            vec![level(METADATA_VERSION_FEATURE, 26), no_op_record()],
            vec![registration(1, 9093)],
            vec![level(METADATA_VERSION_FEATURE, 27)],
        ] {
            let batch = encode_data_batch(0, 1, 0, &values).expect("batch");
            log.append_as_leader(batch, 1).expect("append");
        }
        let mut image = MetadataImage::default();
        // Offsets 0..2 are the first batch; the second ends at 2, the third at 3.
        assert_eq!(image.apply_log(&log, 3).expect("applies"), 3);
        assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(26));
        assert_eq!(image.next_offset(), 3);
        assert_eq!(image.apply_log(&log, 3).expect("applies"), 0);
        assert_eq!(image.apply_log(&log, 4).expect("applies"), 1);
        assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(27));
        assert_eq!(image.no_op_records(), 1);
    }

    #[test]
    fn a_metadata_version_outside_what_this_controller_implements_is_refused_and_not_applied() {
        // Issue 22: a log written by a Kafka 4.4 controller at 4.5-IV0 (34,
        // unstable in 4.4.0); 4.4-IV2 (33) is implemented.
        let mut image = MetadataImage::default();
        image
            .apply_record(0, &level(METADATA_VERSION_FEATURE, 33))
            .expect("33 is implemented");
        image
            .apply_record(0, &level(METADATA_VERSION_FEATURE, 27))
            .expect("27 is implemented");
        for bad in [34, 0, 6] {
            let err = image
                .apply_record(5, &level(METADATA_VERSION_FEATURE, bad))
                .expect_err("refused");
            assert!(
                err.to_string()
                    .contains(&format!("offset 5 sets metadata.version level {bad}")),
                "{err}"
            );
        }
        assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(27));
    }

    #[test]
    fn an_image_is_written_with_metadata_version_first_and_without_transaction_markers() {
        use crate::metadata::records::{begin_transaction_record, end_transaction_record};
        let mut image = MetadataImage::default();
        let values = [
            begin_transaction_record(Some("Bootstrap records")),
            level(METADATA_VERSION_FEATURE, 27),
            level("eligible.leader.replicas.version", 1),
            level("transaction.version", 2),
            end_transaction_record(),
        ];
        for (offset, v) in values.iter().enumerate() {
            image.apply_record(offset as i64, v).expect("applies");
        }
        assert_eq!(image.transaction_markers(), 2);
        assert!(image.unknown_records().is_empty());
        let records = image_records(&image);
        assert_eq!(records.len(), 3);
        assert_eq!(records[0], level(METADATA_VERSION_FEATURE, 27));
        assert_eq!(records[1], level("eligible.leader.replicas.version", 1));
    }

    #[test]
    fn a_producer_ids_record_sets_the_next_producer_id_and_the_image_writes_it_without_a_broker() {
        let mut image = MetadataImage::default();
        assert_eq!(image.next_producer_id(), None);
        assert!(image_records(&image).is_empty());
        let record = |next| {
            ProducerIdsRecord {
                broker_id: 1,
                broker_epoch: 42,
                next_producer_id: next,
            }
            .encode_framed()
        };
        image.apply_record(0, &record(1000)).expect("applies");
        image.apply_record(1, &record(2000)).expect("applies");
        assert_eq!(image.next_producer_id(), Some(2000));
        let records = image_records(&image);
        let expected = ProducerIdsRecord {
            broker_id: -1,
            broker_epoch: -1,
            next_producer_id: 2000,
        };
        assert_eq!(records, vec![expected.encode_framed()]);
        let mut rebuilt = MetadataImage::default();
        rebuilt.apply_record(0, &records[0]).expect("applies");
        assert_eq!(rebuilt.next_producer_id(), Some(2000));
    }
}
