//! Kafka's vocabulary, defined once for `kraft-controller` and
//! `kraft-operator` (as Kafka's `org.apache.kafka.common` package is shared by
//! its brokers, controllers and clients): the text form of a `Uuid`, a
//! listener `Endpoint`, the error codes and names we answer and read, the
//! metadata topic's name, partition and id, and DescribeCluster's endpoint
//! types (KIP-919).
//!
//! Owns names, constants and their pure conversions; it must not do I/O,
//! hold state, or know Raft, the log layout or Kubernetes. No tokio.

pub mod endpoint;
pub mod errors;
pub mod kafka_uuid;
pub mod metadata_topic;

pub use endpoint::{Endpoint, EndpointError, EndpointType, parse_host_port};
pub use errors::{ResponseError, error_name};
pub use kafka_uuid::UuidError;
pub use metadata_topic::{
    METADATA_PARTITION, METADATA_PARTITION_DIR, METADATA_TOPIC, METADATA_TOPIC_ID,
};
