//! The KRaft metadata topic (`__cluster_metadata`, one partition), as Kafka's
//! `Topic.CLUSTER_METADATA_TOPIC_NAME`, `Uuid.METADATA_TOPIC_ID` and
//! `KafkaRaftServer.MetadataPartition` name it. Constants only.

use uuid::Uuid;

/// The metadata topic's name (Kafka's `Topic.CLUSTER_METADATA_TOPIC_NAME`).
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// The metadata topic's only partition index.
pub const METADATA_PARTITION: i32 = 0;

/// The partition's directory name under `metadata.log.dir`
/// (`<topic>-<partition>`).
pub const METADATA_PARTITION_DIR: &str = "__cluster_metadata-0";

/// Kafka's `Uuid.METADATA_TOPIC_ID` (`AAAAAAAAAAAAAAAAAAAAAQ`, `Uuid(0, 1)`):
/// the fixed topic id of `__cluster_metadata`, written to
/// `partition.metadata` and never handed out as a random id.
pub const METADATA_TOPIC_ID: Uuid = Uuid::from_u128(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka_uuid;

    #[test]
    fn the_metadata_topic_id_is_kafkas_fixed_id() {
        assert_eq!(
            kafka_uuid::to_string(METADATA_TOPIC_ID),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        assert_eq!(METADATA_TOPIC_ID, Uuid::from_u64_pair(0, 1));
        assert_eq!(
            METADATA_PARTITION_DIR,
            format!("{METADATA_TOPIC}-{METADATA_PARTITION}")
        );
    }
}
