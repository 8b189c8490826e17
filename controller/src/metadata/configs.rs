//! The dynamic configurations of the image (Kafka's `ConfigurationsImage`):
//! for each resource (Kafka's `ConfigResource`: type id and name) its keys
//! and values, as the ConfigRecords (4) committed so far say. A record with
//! a null value deletes its key; a resource left without keys is gone.
//!
//! Resource types are Kafka's `ConfigResource.Type` ids: TOPIC 2 (name: the
//! topic), BROKER 4 (name: a broker id, or `""` for the cluster-wide
//! default). Owns the state and its records; it must not validate keys or
//! values (the quorum controller does before it writes them).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::records::ConfigRecord;

/// Kafka's `ConfigResource.Type.TOPIC` id.
pub const CONFIG_RESOURCE_TYPE_TOPIC: i8 = 2;

/// A configuration resource: Kafka's `ConfigResource` (type id, name).
pub type ConfigResourceKey = (i8, String);

/// The committed dynamic configurations (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigsImage {
    resources: BTreeMap<ConfigResourceKey, BTreeMap<String, String>>,
}

impl ConfigsImage {
    /// Every resource with at least one key, in (type, name) order.
    pub fn resources(&self) -> &BTreeMap<ConfigResourceKey, BTreeMap<String, String>> {
        &self.resources
    }

    /// The keys and values of one resource (empty when it has none).
    pub fn of(&self, resource_type: i8, name: &str) -> BTreeMap<String, String> {
        self.resources
            .get(&(resource_type, name.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// Applies one ConfigRecord (Kafka's `ConfigurationControlManager.replay`).
    pub fn apply(&mut self, record: &ConfigRecord) {
        let key = (record.resource_type, record.resource_name.clone());
        match &record.value {
            Some(value) => {
                self.resources
                    .entry(key)
                    .or_default()
                    .insert(record.name.clone(), value.clone());
            }
            None => {
                if let Some(configs) = self.resources.get_mut(&key) {
                    configs.remove(&record.name);
                    if configs.is_empty() {
                        self.resources.remove(&key);
                    }
                }
            }
        }
    }

    /// Drops every key of a resource (Kafka's `ConfigurationsDelta` does this
    /// for a topic when its RemoveTopicRecord is replayed).
    pub fn remove_resource(&mut self, resource_type: i8, name: &str) {
        self.resources.remove(&(resource_type, name.to_owned()));
    }

    /// One ConfigRecord per key, in resource then key order: what a snapshot
    /// holds (Kafka's `ConfigurationsImage.write`).
    pub fn records(&self) -> Vec<Bytes> {
        self.resources
            .iter()
            .flat_map(|((resource_type, resource_name), configs)| {
                configs.iter().map(move |(name, value)| {
                    ConfigRecord {
                        resource_type: *resource_type,
                        resource_name: resource_name.clone(),
                        name: name.clone(),
                        value: Some(value.clone()),
                    }
                    .encode_framed()
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{CONFIG_RESOURCE_TYPE_BROKER, FramedRecord};

    fn record(resource_type: i8, resource: &str, name: &str, value: Option<&str>) -> ConfigRecord {
        ConfigRecord {
            resource_type,
            resource_name: resource.into(),
            name: name.into(),
            value: value.map(str::to_owned),
        }
    }

    #[test]
    fn a_null_value_deletes_its_key_and_an_empty_resource_is_gone() {
        let mut configs = ConfigsImage::default();
        configs.apply(&record(2, "t", "retention.ms", Some("1000")));
        configs.apply(&record(2, "t", "cleanup.policy", Some("compact")));
        configs.apply(&record(4, "", "min.insync.replicas", Some("2")));
        configs.apply(&record(2, "t", "retention.ms", Some("2000")));
        assert_eq!(configs.of(2, "t")["retention.ms"], "2000");
        assert_eq!(configs.of(CONFIG_RESOURCE_TYPE_BROKER, "").len(), 1);
        configs.apply(&record(2, "t", "retention.ms", None));
        configs.apply(&record(2, "t", "cleanup.policy", None));
        configs.apply(&record(2, "other", "cleanup.policy", None));
        assert!(configs.of(2, "t").is_empty());
        assert_eq!(configs.resources().len(), 1);
    }

    #[test]
    fn the_records_rebuild_an_equal_image_and_a_removed_topic_has_no_configs() {
        let mut configs = ConfigsImage::default();
        configs.apply(&record(2, "t", "retention.ms", Some("1000")));
        configs.apply(&record(2, "u", "segment.ms", Some("5")));
        configs.apply(&record(4, "1", "log.cleaner.threads", Some("2")));
        let mut rebuilt = ConfigsImage::default();
        for value in configs.records() {
            let framed = FramedRecord::decode(&value).expect("frame");
            rebuilt.apply(&ConfigRecord::decode_message(&framed.message).expect("decodes"));
        }
        assert_eq!(rebuilt, configs);
        rebuilt.remove_resource(CONFIG_RESOURCE_TYPE_TOPIC, "t");
        assert!(rebuilt.of(2, "t").is_empty());
        assert_eq!(rebuilt.resources().len(), 2);
    }

    /// Golden bytes from Kafka 4.4.0's `MetadataRecordSerde` (jshell): a
    /// topic's key set, and a broker's key deleted (null value).
    #[test]
    fn config_records_of_topics_and_deletions_are_kafkas_bytes() {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(
            hex(&record(2, "t1", "retention.ms", Some("1000")).encode_framed()),
            concat!(
                "010400",                     // frame 1, api key 4, version 0
                "02",                         // ResourceType int8 = 2 (TOPIC)
                "037431",                     // ResourceName "t1"
                "0d726574656e74696f6e2e6d73", // Name "retention.ms"
                "053130303000",               // Value "1000", no tagged fields
            )
        );
        assert_eq!(
            hex(&record(4, "1", "log.cleaner.threads", None).encode_framed()),
            concat!(
                "010400",                                   // frame, api key 4, version 0
                "04",                                       // ResourceType 4 (BROKER)
                "0231",                                     // ResourceName "1"
                "146c6f672e636c65616e65722e74687265616473", // Name
                "00",                                       // Value null
                "00",                                       // no tagged fields
            )
        );
    }
}
