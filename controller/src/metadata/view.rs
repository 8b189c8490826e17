//! A JSON view of the metadata image, for operators and tests (the body of
//! `GET /metadata`).
//!
//! ```json
//! {"last_offset": 41, "metadata_version": "4.1-IV1",
//!  "features": {"metadata.version": 27, "kraft.version": 1, ...},
//!  "controllers": [{"id": 1, "incarnation_id": "<Kafka base64 uuid>",
//!    "zk_migration_ready": false,
//!    "endpoints": [{"name": "CONTROLLER", "host": "kq-1", "port": 9093,
//!                   "security_protocol": "PLAINTEXT"}],
//!    "supported_features": [{"name": "kraft.version", "min_version": 0, "max_version": 1}]}],
//!  "brokers": [{"id": 1, "incarnation_id": "...", "epoch": 57, "fenced": false,
//!    "in_controlled_shutdown": false, "rack": null,
//!    "endpoints": [{"name": "PLAINTEXT", ...}], "log_dirs": 1}],
//!  "topics": [{"name": "foo", "topic_id": "...", "partitions": [{"partition": 0,
//!    "leader": 1, "leader_epoch": 0, "partition_epoch": 0, "replicas": [1, 2, 3],
//!    "isr": [1, 2, 3], "elr": [], "last_known_elr": []}]}],
//!  "no_op_records": 80, "unknown_records": 1}
//! ```
//!
//! Uuids are printed as Kafka prints them (`Uuid.toString`, URL-safe
//! base64). Owns the shape only; it must not change the image.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{image::MetadataImage, registration::security_protocol_name, version::MetadataVersion};
use crate::log::meta_properties::uuid_to_kafka_string;

/// The image as `GET /metadata` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageView {
    /// Offset of the last record applied; -1 before any.
    pub last_offset: i64,
    /// `metadata.version` as a release string (`4.1-IV1`), if set.
    pub metadata_version: Option<String>,
    /// Finalized feature levels by name (`kraft.version` included when the
    /// caller adds it: it lives in the Raft layer, not in metadata records).
    pub features: BTreeMap<String, i16>,
    /// Registered controllers (KIP-919), by id.
    pub controllers: Vec<ControllerView>,
    /// Registered brokers, by id.
    pub brokers: Vec<BrokerView>,
    /// Topics by name, with their partitions.
    pub topics: Vec<TopicView>,
    /// NoOpRecords applied since this node started (or loaded its snapshot).
    pub no_op_records: u64,
    /// Records kept without being interpreted.
    pub unknown_records: usize,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicView {
    /// Topic name.
    pub name: String,
    /// Topic id (Kafka's text form).
    pub topic_id: String,
    /// Partitions by id.
    pub partitions: Vec<PartitionView>,
}

/// One partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionView {
    /// Partition id.
    pub partition: i32,
    /// Leader, -1 when offline.
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch.
    pub partition_epoch: i32,
    /// Replicas in preferred order.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// KIP-966 eligible leader replicas.
    pub elr: Vec<i32>,
    /// KIP-966 last known ELR.
    pub last_known_elr: Vec<i32>,
}

fn topic_views(image: &MetadataImage) -> Vec<TopicView> {
    let mut out: Vec<TopicView> = image
        .topics()
        .by_id()
        .values()
        .map(|t| TopicView {
            name: t.name.clone(),
            topic_id: uuid_to_kafka_string(t.id),
            partitions: t
                .partitions
                .iter()
                .map(|(id, p)| PartitionView {
                    partition: *id,
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    elr: p.elr.clone(),
                    last_known_elr: p.last_known_elr.clone(),
                })
                .collect(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One registered controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControllerView {
    /// Node id.
    pub id: i32,
    /// Incarnation id (Kafka's text form).
    pub incarnation_id: String,
    /// Always false here.
    pub zk_migration_ready: bool,
    /// Listeners.
    pub endpoints: Vec<EndpointView>,
    /// Supported feature ranges.
    pub supported_features: Vec<FeatureRangeView>,
}

/// One registered broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokerView {
    /// Broker id.
    pub id: i32,
    /// Incarnation id (Kafka's text form).
    pub incarnation_id: String,
    /// Broker epoch (offset of its RegisterBrokerRecord).
    pub epoch: i64,
    /// Fenced.
    pub fenced: bool,
    /// In controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// Rack.
    pub rack: Option<String>,
    /// Listeners.
    pub endpoints: Vec<EndpointView>,
    /// Number of online log directories.
    pub log_dirs: usize,
}

fn endpoint_view(name: &str, host: &str, port: u16, security_protocol: i16) -> EndpointView {
    EndpointView {
        name: name.to_owned(),
        host: host.to_owned(),
        port,
        security_protocol: security_protocol_name(security_protocol)
            .map_or_else(|| security_protocol.to_string(), str::to_owned),
    }
}

/// One listener of a registered controller or broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointView {
    /// Listener name.
    pub name: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Kafka's security protocol name, or its id when unknown.
    pub security_protocol: String,
}

/// A supported feature range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeatureRangeView {
    /// Feature name.
    pub name: String,
    /// Lowest level supported.
    pub min_version: i16,
    /// Highest level supported.
    pub max_version: i16,
}

impl ImageView {
    /// The view of `image`, with `extra_features` (e.g. `kraft.version`)
    /// added to its finalized features.
    pub fn of(image: &MetadataImage, extra_features: &[(&str, i16)]) -> Self {
        let mut features = image.features().clone();
        for (name, level) in extra_features {
            features.insert((*name).to_owned(), *level);
        }
        Self {
            last_offset: image.next_offset() - 1,
            metadata_version: image
                .feature_level(super::records::METADATA_VERSION_FEATURE)
                .map(|l| {
                    MetadataVersion::from_feature_level(l)
                        .map_or_else(|| format!("level {l}"), |v| v.to_string())
                }),
            features,
            controllers: image
                .controllers()
                .iter()
                .map(|(id, c)| ControllerView {
                    id: *id,
                    incarnation_id: uuid_to_kafka_string(c.incarnation_id),
                    zk_migration_ready: c.zk_migration_ready,
                    endpoints: c
                        .endpoints
                        .iter()
                        .map(|e| endpoint_view(&e.name, &e.host, e.port, e.security_protocol))
                        .collect(),
                    supported_features: c
                        .supported_features
                        .iter()
                        .map(|f| FeatureRangeView {
                            name: f.name.clone(),
                            min_version: f.min_supported_version,
                            max_version: f.max_supported_version,
                        })
                        .collect(),
                })
                .collect(),
            brokers: image
                .brokers()
                .iter()
                .map(|(id, b)| BrokerView {
                    id: *id,
                    incarnation_id: uuid_to_kafka_string(b.incarnation_id),
                    epoch: b.epoch,
                    fenced: b.fenced,
                    in_controlled_shutdown: b.in_controlled_shutdown,
                    rack: b.rack.clone(),
                    endpoints: b
                        .endpoints
                        .iter()
                        .map(|e| endpoint_view(&e.name, &e.host, e.port, e.security_protocol))
                        .collect(),
                    log_dirs: b.log_dirs.len(),
                })
                .collect(),
            topics: topic_views(image),
            no_op_records: image.no_op_records(),
            unknown_records: image.unknown_records().len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{
        ControllerEndpoint, FeatureLevelRecord, METADATA_VERSION_FEATURE, RegisterControllerRecord,
    };

    #[test]
    fn the_view_names_versions_protocols_and_uuids_as_kafka_does() {
        let mut image = MetadataImage::default();
        let mv = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        };
        image.apply_record(0, &mv.encode_framed()).expect("applies");
        let registration = RegisterControllerRecord {
            controller_id: 3,
            incarnation_id: uuid::Uuid::nil(),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: "kq-3".into(),
                port: 9093,
                security_protocol: 1,
            }],
            features: vec![],
        };
        image
            .apply_record(1, &registration.encode_framed())
            .expect("applies");
        let view = ImageView::of(&image, &[("kraft.version", 1)]);
        let json = serde_json::to_value(&view).expect("serializes");
        assert_eq!(json["last_offset"], 1);
        assert_eq!(json["metadata_version"], "4.1-IV1");
        assert_eq!(json["features"]["kraft.version"], 1);
        assert_eq!(json["controllers"][0]["id"], 3);
        assert_eq!(
            json["controllers"][0]["incarnation_id"],
            "AAAAAAAAAAAAAAAAAAAAAA"
        );
        assert_eq!(
            json["controllers"][0]["endpoints"][0]["security_protocol"],
            "SSL"
        );
        assert_eq!(json["brokers"], serde_json::json!([]));
    }

    #[test]
    fn the_view_lists_brokers_with_epoch_fencing_and_endpoints() {
        use crate::metadata::records::{BrokerEndpoint, RegisterBrokerRecord};
        let mut image = MetadataImage::default();
        let r = RegisterBrokerRecord {
            broker_id: 11,
            is_migrating_zk_broker: false,
            incarnation_id: uuid::Uuid::nil(),
            broker_epoch: 5,
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "b-11".into(),
                port: 9092,
                security_protocol: 0,
            }],
            features: vec![],
            rack: Some("r1".into()),
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: vec![uuid::Uuid::from_u128(200)],
            cordoned_log_dirs: None,
        };
        image.apply_record(5, &r.encode_framed(3)).expect("applies");
        let json = serde_json::to_value(ImageView::of(&image, &[])).expect("serializes");
        let b = &json["brokers"][0];
        assert_eq!((b["id"].as_i64(), b["epoch"].as_i64()), (Some(11), Some(5)));
        assert_eq!(b["fenced"], true);
        assert_eq!(b["rack"], "r1");
        assert_eq!(b["log_dirs"], 1);
        assert_eq!(b["endpoints"][0]["security_protocol"], "PLAINTEXT");
    }
}
