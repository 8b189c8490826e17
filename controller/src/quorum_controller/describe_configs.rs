//! DescribeConfigs (32, v1-4) as a Kafka controller answers it
//! (`ControllerApis.handleDescribeConfigsRequest` through `ConfigHelper`,
//! over the node's committed image: any controller answers, active or not).
//!
//! - TOPIC: INVALID_TOPIC_EXCEPTION for a bad name, UNKNOWN_TOPIC_OR_PARTITION
//!   for a topic the image lacks; otherwise every (non-internal) key of
//!   Kafka 4.4's `LogConfig`: the topic's own value (TOPIC_CONFIG), else the
//!   cluster-wide dynamic value of its broker synonym
//!   (`ServerTopicConfigSynonyms`, DYNAMIC_DEFAULT_BROKER_CONFIG), else
//!   Kafka's default (DEFAULT_CONFIG); synonyms in that order on request.
//! - BROKER `""`: the cluster-wide dynamic configs
//!   (DYNAMIC_DEFAULT_BROKER_CONFIG). BROKER = this node's id: its own
//!   dynamic configs (DYNAMIC_BROKER_CONFIG) over the cluster-wide ones
//!   (Kafka also lists every static config of the node; this controller
//!   does not). Another id: INVALID_REQUEST (`Unexpected broker id, expected
//!   N or empty string, but received M`).
//! - Other types: INVALID_REQUEST (`Unsupported resource type: T`).
//!
//! Values of keys that look like secrets (`*.password`, `sasl.jaas.config`,
//! `*secret*`: Kafka's PASSWORD keys) are null and marked sensitive. Owns the
//! answer's shape; it must not change state.

use std::collections::BTreeMap;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        DescribeConfigsRequest, DescribeConfigsResponse,
        describe_configs_response::{
            DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
        },
    },
    protocol::StrBytes,
};

use super::{
    topic_config_defs::{ConfigType, TOPIC_CONFIGS},
    topic_names::validate_topic_name,
};
use crate::metadata::{
    configs::{CONFIG_RESOURCE_TYPE_TOPIC, ConfigsImage},
    records::CONFIG_RESOURCE_TYPE_BROKER,
};

/// Kafka's `DescribeConfigsResponse.ConfigSource.TOPIC_CONFIG`.
pub const SOURCE_TOPIC_CONFIG: i8 = 1;
/// `DYNAMIC_BROKER_CONFIG`.
pub const SOURCE_DYNAMIC_BROKER_CONFIG: i8 = 2;
/// `DYNAMIC_DEFAULT_BROKER_CONFIG`.
pub const SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
/// `DEFAULT_CONFIG`.
pub const SOURCE_DEFAULT_CONFIG: i8 = 5;

/// The broker key a topic key falls back to (Kafka 4.4's
/// `ServerTopicConfigSynonyms`, first synonym).
fn broker_synonym(topic_key: &str) -> Option<&'static str> {
    Some(match topic_key {
        "cleanup.policy" => "log.cleanup.policy",
        "compression.gzip.level" => "compression.gzip.level",
        "compression.lz4.level" => "compression.lz4.level",
        "compression.type" => "compression.type",
        "compression.zstd.level" => "compression.zstd.level",
        "delete.retention.ms" => "log.cleaner.delete.retention.ms",
        "file.delete.delay.ms" => "log.segment.delete.delay.ms",
        "flush.messages" => "log.flush.interval.messages",
        "flush.ms" => "log.flush.interval.ms",
        "index.interval.bytes" => "log.index.interval.bytes",
        "local.retention.bytes" => "log.local.retention.bytes",
        "local.retention.ms" => "log.local.retention.ms",
        "max.compaction.lag.ms" => "log.cleaner.max.compaction.lag.ms",
        "max.decompressed.message.bytes" => "max.decompressed.message.bytes",
        "max.message.bytes" => "message.max.bytes",
        "message.timestamp.after.max.ms" => "log.message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms" => "log.message.timestamp.before.max.ms",
        "message.timestamp.type" => "log.message.timestamp.type",
        "min.cleanable.dirty.ratio" => "log.cleaner.min.cleanable.ratio",
        "min.compaction.lag.ms" => "log.cleaner.min.compaction.lag.ms",
        "min.insync.replicas" => "min.insync.replicas",
        "preallocate" => "log.preallocate",
        "remote.copy.lag.bytes" => "log.remote.copy.lag.bytes",
        "remote.copy.lag.ms" => "log.remote.copy.lag.ms",
        "retention.bytes" => "log.retention.bytes",
        "retention.ms" => "log.retention.ms",
        "segment.bytes" => "log.segment.bytes",
        "segment.index.bytes" => "log.index.size.max.bytes",
        "segment.jitter.ms" => "log.roll.jitter.ms",
        "segment.ms" => "log.roll.ms",
        "unclean.leader.election.enable" => "unclean.leader.election.enable",
        _ => return None,
    })
}

/// Kafka's `DescribeConfigsResponse.ConfigType` id.
fn config_type_id(t: ConfigType) -> i8 {
    match t {
        ConfigType::Boolean => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
    }
}

fn is_sensitive(name: &str) -> bool {
    name.ends_with(".password") || name == "sasl.jaas.config" || name.contains("secret")
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// One entry: its value (null when sensitive) and source, and the synonyms
/// (name, value, source) from the highest precedence down, when asked.
fn entry(
    name: &str,
    candidates: &[(String, Option<String>, i8)],
    config_type: i8,
    include_synonyms: bool,
) -> DescribeConfigsResourceResult {
    let sensitive = is_sensitive(name);
    let shown = |v: &Option<String>| {
        if sensitive {
            None
        } else {
            v.as_deref().map(text)
        }
    };
    let (value, source) = candidates
        .first()
        .map_or((None, SOURCE_DEFAULT_CONFIG), |(_, v, s)| (shown(v), *s));
    let synonyms = if include_synonyms {
        candidates
            .iter()
            .map(|(n, v, s)| {
                DescribeConfigsSynonym::default()
                    .with_name(text(n))
                    .with_value(shown(v))
                    .with_source(*s)
            })
            .collect()
    } else {
        Vec::new()
    };
    DescribeConfigsResourceResult::default()
        .with_name(text(name))
        .with_value(value)
        .with_read_only(false)
        .with_config_source(source)
        .with_is_sensitive(sensitive)
        .with_synonyms(synonyms)
        .with_config_type(config_type)
}

fn topic_entries(
    configs: &ConfigsImage,
    topic: &str,
    include_synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let own = configs.of(CONFIG_RESOURCE_TYPE_TOPIC, topic);
    let cluster = configs.of(CONFIG_RESOURCE_TYPE_BROKER, "");
    TOPIC_CONFIGS
        .iter()
        .filter(|d| d.name != "internal.segment.bytes")
        .map(|d| {
            let mut candidates = Vec::new();
            if let Some(v) = own.get(d.name) {
                candidates.push((d.name.to_owned(), Some(v.clone()), SOURCE_TOPIC_CONFIG));
            }
            let synonym = broker_synonym(d.name);
            if let Some(v) = synonym.and_then(|s| cluster.get(s)) {
                candidates.push((
                    synonym.unwrap_or(d.name).to_owned(),
                    Some(v.clone()),
                    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
                ));
            }
            candidates.push((
                synonym.unwrap_or(d.name).to_owned(),
                d.default.map(str::to_owned),
                SOURCE_DEFAULT_CONFIG,
            ));
            entry(
                d.name,
                &candidates,
                config_type_id(d.config_type),
                include_synonyms,
            )
        })
        .collect()
}

fn broker_entries(
    configs: &ConfigsImage,
    own: Option<&str>,
    include_synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let cluster = configs.of(CONFIG_RESOURCE_TYPE_BROKER, "");
    let node = own
        .map(|id| configs.of(CONFIG_RESOURCE_TYPE_BROKER, id))
        .unwrap_or_default();
    let names: BTreeMap<&String, ()> = cluster.keys().chain(node.keys()).map(|k| (k, ())).collect();
    names
        .keys()
        .map(|name| {
            let mut candidates = Vec::new();
            if let Some(v) = node.get(*name) {
                candidates.push((
                    (*name).clone(),
                    Some(v.clone()),
                    SOURCE_DYNAMIC_BROKER_CONFIG,
                ));
            }
            if let Some(v) = cluster.get(*name) {
                candidates.push((
                    (*name).clone(),
                    Some(v.clone()),
                    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
                ));
            }
            // The broker key's type is not known here: UNKNOWN (0).
            entry(name, &candidates, 0, include_synonyms)
        })
        .collect()
}

/// The DescribeConfigs answer of node `node_id` over `configs` (see the
/// module doc); `topic_exists` says whether the image has a topic.
pub fn describe_configs(
    request: &DescribeConfigsRequest,
    configs: &ConfigsImage,
    node_id: i32,
    topic_exists: &dyn Fn(&str) -> bool,
) -> DescribeConfigsResponse {
    let results = request
        .resources
        .iter()
        .map(|r| {
            let name = r.resource_name.to_string();
            let base = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            let described = match r.resource_type {
                CONFIG_RESOURCE_TYPE_TOPIC => validate_topic_name(&name)
                    .map_err(|m| (ResponseError::InvalidTopicException, m))
                    .and_then(|()| {
                    if topic_exists(&name) {
                        Ok(topic_entries(configs, &name, request.include_synonyms))
                    } else {
                        Err((
                            ResponseError::UnknownTopicOrPartition,
                            format!("The topic '{name}' does not exist."),
                        ))
                    }
                }),
                CONFIG_RESOURCE_TYPE_BROKER if name.is_empty() => {
                    Ok(broker_entries(configs, None, request.include_synonyms))
                }
                CONFIG_RESOURCE_TYPE_BROKER => match name.parse::<i32>() {
                    Ok(id) if id == node_id => Ok(broker_entries(
                        configs,
                        Some(&name),
                        request.include_synonyms,
                    )),
                    Ok(_) => Err((
                        ResponseError::InvalidRequest,
                        format!(
                            "Unexpected broker id, expected {node_id} or empty string, but received {name}"
                        ),
                    )),
                    Err(_) => Err((
                        ResponseError::InvalidRequest,
                        format!("Broker id must be an integer, but it is: {name}"),
                    )),
                },
                other => Err((
                    ResponseError::InvalidRequest,
                    format!("Unsupported resource type: {other}"),
                )),
            };
            match described {
                Ok(mut entries) => {
                    // Null (or empty, as Kafka's ConfigHelper reads it): all keys.
                    if let Some(keys) = r.configuration_keys.as_ref().filter(|k| !k.is_empty()) {
                        entries.retain(|e| keys.contains(&e.name));
                    }
                    base.with_configs(entries)
                }
                Err((error, message)) => base
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;

    use super::*;
    use crate::metadata::records::ConfigRecord;

    fn configs(pairs: &[(i8, &str, &str, &str)]) -> ConfigsImage {
        let mut c = ConfigsImage::default();
        for (t, r, k, v) in pairs {
            c.apply(&ConfigRecord {
                resource_type: *t,
                resource_name: (*r).into(),
                name: (*k).into(),
                value: Some((*v).into()),
            });
        }
        c
    }

    fn request(resources: &[(i8, &str)], synonyms: bool) -> DescribeConfigsRequest {
        DescribeConfigsRequest::default()
            .with_include_synonyms(synonyms)
            .with_resources(
                resources
                    .iter()
                    .map(|(t, n)| {
                        DescribeConfigsResource::default()
                            .with_resource_type(*t)
                            .with_resource_name(text(n))
                    })
                    .collect(),
            )
    }

    fn find<'a>(r: &'a DescribeConfigsResult, name: &str) -> &'a DescribeConfigsResourceResult {
        r.configs
            .iter()
            .find(|e| e.name.as_str() == name)
            .expect("listed")
    }

    #[test]
    fn a_topic_lists_its_own_values_then_cluster_defaults_then_kafkas_defaults() {
        let c = configs(&[
            (2, "t", "retention.ms", "1000"),
            (4, "", "log.segment.bytes", "2097152"),
        ]);
        let answer = describe_configs(&request(&[(2, "t")], true), &c, 1, &|n| n == "t");
        let r = &answer.results[0];
        assert_eq!(r.error_code, 0);
        assert_eq!(r.configs.len(), TOPIC_CONFIGS.len() - 1);
        let retention = find(r, "retention.ms");
        assert_eq!(
            (retention.value.as_deref(), retention.config_source),
            (Some("1000"), SOURCE_TOPIC_CONFIG)
        );
        assert_eq!(retention.synonyms.len(), 2);
        assert_eq!(retention.synonyms[1].name.as_str(), "log.retention.ms");
        let segment = find(r, "segment.bytes");
        assert_eq!(
            (segment.value.as_deref(), segment.config_source),
            (Some("2097152"), SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)
        );
        let policy = find(r, "cleanup.policy");
        assert_eq!(
            (
                policy.value.as_deref(),
                policy.config_source,
                policy.config_type
            ),
            (Some("delete"), SOURCE_DEFAULT_CONFIG, 7)
        );
    }

    #[test]
    fn unknown_topics_other_broker_ids_and_other_types_get_kafkas_errors() {
        let c = configs(&[
            (4, "", "log.cleaner.threads", "2"),
            (4, "1", "a.password", "x"),
        ]);
        let answer = describe_configs(
            &request(
                &[(2, "nope"), (2, "bad name"), (4, "7"), (4, "x"), (8, "1")],
                false,
            ),
            &c,
            1,
            &|_| false,
        );
        let codes: Vec<i16> = answer.results.iter().map(|r| r.error_code).collect();
        assert_eq!(
            codes,
            [
                ResponseError::UnknownTopicOrPartition.code(),
                ResponseError::InvalidTopicException.code(),
                ResponseError::InvalidRequest.code(),
                ResponseError::InvalidRequest.code(),
                ResponseError::InvalidRequest.code(),
            ]
        );
        let answer = describe_configs(&request(&[(4, ""), (4, "1")], false), &c, 1, &|_| false);
        let default = &answer.results[0];
        assert_eq!(default.configs.len(), 1);
        assert_eq!(
            default.configs[0].config_source,
            SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG
        );
        let own = &answer.results[1];
        assert_eq!(own.configs.len(), 2);
        let secret = find(own, "a.password");
        assert!(secret.is_sensitive && secret.value.is_none());
        assert_eq!(secret.config_source, SOURCE_DYNAMIC_BROKER_CONFIG);
    }
}
