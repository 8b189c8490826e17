//! The configs a partition's leader election reads, as Kafka's
//! `ConfigurationControlManager` resolves them for `ReplicationControlManager`:
//! `min.insync.replicas` (KIP-966 eligible leader replicas, Kafka's
//! `getTopicEffectiveMinIsr`) and `unclean.leader.election.enable` (Kafka's
//! `uncleanLeaderElectionEnabledForTopic`), each from the topic's config,
//! else the cluster-wide default (the BROKER resource `""`), else Kafka's
//! default. Kafka also reads, between the topic and the cluster default, the
//! active controller's node-level dynamic config, and before its default
//! the controller's static `server.properties`; neither is read here. Taken from the speculative configs when the quorum controller
//! activates and again only when a decision may have changed one of them
//! ([`super::replication_control::ReplicationControl::configs_changed`]).

use std::collections::BTreeMap;

use crate::metadata::{
    configs::{CONFIG_RESOURCE_TYPE_TOPIC, ConfigResourceKey, ConfigsImage},
    records::CONFIG_RESOURCE_TYPE_BROKER,
};

/// Kafka's `min.insync.replicas` key (`TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG`).
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";
/// Kafka's `unclean.leader.election.enable` key (default `false`).
const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";

/// The election configs of the speculative state (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct ElectionConfigs {
    /// KIP-966 ELR on (`eligible.leader.replicas.version` >= 1, Kafka's
    /// `isElrEnabled`), as committed at activation.
    pub elr_enabled: bool,
    min_isr: BTreeMap<ConfigResourceKey, usize>,
    unclean: BTreeMap<ConfigResourceKey, bool>,
}

impl ElectionConfigs {
    /// ELR on or off, with the values of `configs`. A value Kafka's
    /// validator would refuse (never written by this controller) counts as
    /// absent.
    pub fn new(elr_enabled: bool, configs: &ConfigsImage) -> Self {
        let mut min_isr = BTreeMap::new();
        let mut unclean = BTreeMap::new();
        for (key, values) in configs.resources() {
            if let Some(v) = values
                .get(MIN_INSYNC_REPLICAS)
                .and_then(|v| v.trim().parse().ok())
            {
                min_isr.insert(key.clone(), v);
            }
            // Kafka's ConfigDef BOOLEAN: "true"/"false", any case.
            if let Some(v) = values
                .get(UNCLEAN_LEADER_ELECTION_ENABLE)
                .and_then(|v| v.trim().to_ascii_lowercase().parse().ok())
            {
                unclean.insert(key.clone(), v);
            }
        }
        Self {
            elr_enabled,
            min_isr,
            unclean,
        }
    }

    fn resolve<T: Copy>(map: &BTreeMap<ConfigResourceKey, T>, topic: &str) -> Option<T> {
        map.get(&(CONFIG_RESOURCE_TYPE_TOPIC, topic.to_owned()))
            .or_else(|| map.get(&(CONFIG_RESOURCE_TYPE_BROKER, String::new())))
            .copied()
    }

    /// Kafka's `getTopicEffectiveMinIsr`: the topic's `min.insync.replicas`,
    /// else the cluster-wide one, else 1; at most the replication factor.
    pub fn min_isr(&self, topic: &str, replication_factor: usize) -> usize {
        Self::resolve(&self.min_isr, topic)
            .unwrap_or(1)
            .min(replication_factor)
    }

    /// Kafka's `uncleanLeaderElectionEnabledForTopic`: the topic's
    /// `unclean.leader.election.enable`, else the cluster-wide one, else
    /// `false`. When on, an election that finds no ISR (or ELR) member may
    /// pick any live replica, at the risk of losing committed records.
    pub fn unclean_election_enabled(&self, topic: &str) -> bool {
        Self::resolve(&self.unclean, topic).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::ConfigRecord;

    fn configs(values: &[(i8, &str, &str, &str)]) -> ConfigsImage {
        let mut c = ConfigsImage::default();
        for (t, r, k, v) in values {
            c.apply(&ConfigRecord {
                resource_type: *t,
                resource_name: (*r).into(),
                name: (*k).into(),
                value: Some((*v).into()),
            });
        }
        c
    }

    #[test]
    fn a_topic_value_wins_over_the_cluster_default_which_wins_over_kafkas() {
        let e = ElectionConfigs::new(true, &ConfigsImage::default());
        assert_eq!(
            (e.min_isr("t", 3), e.unclean_election_enabled("t")),
            (1, false)
        );
        let e = ElectionConfigs::new(
            true,
            &configs(&[
                (4, "", MIN_INSYNC_REPLICAS, "2"),
                (4, "", UNCLEAN_LEADER_ELECTION_ENABLE, "TRUE"),
                (2, "t", MIN_INSYNC_REPLICAS, "5"),
                (2, "t", UNCLEAN_LEADER_ELECTION_ENABLE, "false"),
                (4, "1", UNCLEAN_LEADER_ELECTION_ENABLE, "false"),
            ]),
        );
        assert_eq!(e.min_isr("t", 3), 3, "capped at the replication factor");
        assert_eq!(e.min_isr("u", 3), 2);
        assert!(!e.unclean_election_enabled("t"));
        assert!(
            e.unclean_election_enabled("u"),
            "the cluster default; another node's value is not read"
        );
    }
}
