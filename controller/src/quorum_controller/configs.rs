//! IncrementalAlterConfigs (44) and AlterConfigs (33) for TOPIC and BROKER
//! resources, as Kafka's `ConfigurationControlManager` decides them and
//! `ControllerApis` shapes the answers, over the speculative configs (the
//! committed image's plus every ConfigRecord this controller appended since
//! it became active).
//!
//! Per resource, in Kafka's order: an unknown resource type is
//! UNSUPPORTED_VERSION (`Unknown resource type N.`), a resource named twice
//! INVALID_REQUEST (`Duplicate resource.`), types other than TOPIC and
//! BROKER INVALID_REQUEST (Kafka serves BROKER_LOGGER, CLIENT_METRICS and
//! GROUP too; this controller does not); then the new values (SET, DELETE,
//! APPEND and SUBTRACT on LIST keys, `Can't APPEND to key K because its
//! type is not LIST.`), then the validator (topic name, Kafka's
//! `LogConfig` checks on the whole merged set; broker names: `""` or a
//! non-negative int), then existence (UNKNOWN_TOPIC_OR_PARTITION,
//! BROKER_ID_NOT_REGISTERED). A resource that fails changes nothing; the
//! others' ConfigRecords are appended together. `validateOnly` appends
//! nothing. A BROKER resource gets a record even for an unchanged value
//! (KAFKA-14136: it makes brokers reload).
//!
//! With KIP-966 ELR enabled (`eligible.leader.replicas.version` >= 1), as
//! Kafka 4.4's `validateAlterConfig`: a broker-level `min.insync.replicas`
//! cannot be set or deleted (INVALID_CONFIG), nor the cluster-level one
//! deleted, explicitly or by a legacy AlterConfigs that leaves it out; and
//! every accepted `min.insync.replicas` ConfigRecord is followed by a
//! ClearElrRecord (Kafka's `createClearElrRecordsAsNeeded`): the topic's for
//! a topic resource, `""` (every topic) for the cluster default. The ELRs
//! were chosen under the old value, so they no longer prove anything.
//!
//! Below `metadata.version` 4.3-IV0 (30) the broker config
//! `cordoned.log.dirs` (KIP-1066) can be neither set nor deleted
//! (INVALID_CONFIG, Kafka 4.4's `isCordonedLogDirsDisabled`). Kafka's
//! further rule for requests sent straight to a controller (not forwarded
//! by a broker), that the new value be a subset of the current one, is not
//! applied here.
//! Owns these decisions; it must not touch the log.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse, RequestKind, ResponseKind, alter_configs_response,
        incremental_alter_configs_response,
    },
    protocol::StrBytes,
};

use super::{
    cluster_control::Refusal,
    election_configs::MIN_INSYNC_REPLICAS,
    topic_config_defs::{BROKER_LIST_CONFIGS, ConfigType, check_log_config, topic_config},
    topic_names::validate_topic_name,
};
use crate::metadata::{
    configs::{CONFIG_RESOURCE_TYPE_TOPIC, ConfigsImage},
    image::MetadataImage,
    records::{
        CONFIG_RECORD_API_KEY, CONFIG_RESOURCE_TYPE_BROKER, ClearElrRecord, ConfigRecord,
        FEATURE_LEVEL_RECORD_API_KEY, FeatureLevelRecord, FramedRecord, METADATA_VERSION_FEATURE,
        REMOVE_TOPIC_RECORD_API_KEY, RemoveTopicRecord,
    },
    version::MetadataVersion,
};

/// The broker config naming log directories that take no new replicas
/// (KIP-1066, Kafka's `ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG`).
pub const CORDONED_LOG_DIRS: &str = "cordoned.log.dirs";

/// Kafka's `ConfigResource.Type.BROKER_LOGGER` id.
pub const CONFIG_RESOURCE_TYPE_BROKER_LOGGER: i8 = 8;
/// Kafka's `ConfigResource.Type.CLIENT_METRICS` id.
pub const CONFIG_RESOURCE_TYPE_CLIENT_METRICS: i8 = 16;
/// Kafka's `ConfigResource.Type.GROUP` id.
pub const CONFIG_RESOURCE_TYPE_GROUP: i8 = 32;

/// One incremental change of a key (Kafka's `AlterConfigOp.OpType`, ids 0-3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterOp {
    /// SET (0): the value (`None` deletes, as Kafka writes a null value).
    Set(Option<String>),
    /// DELETE (1).
    Delete,
    /// APPEND (2): comma-separated elements added to a LIST key.
    Append(String),
    /// SUBTRACT (3): comma-separated elements removed from a LIST key.
    Subtract(String),
    /// An op id Kafka does not define (the resource is refused).
    Unknown(i8),
}

impl AlterOp {
    /// The op of Kafka's id `op` with `value`.
    pub fn from_kafka(op: i8, value: Option<String>) -> Self {
        match op {
            0 => AlterOp::Set(value),
            1 => AlterOp::Delete,
            2 => AlterOp::Append(value.unwrap_or_default()),
            3 => AlterOp::Subtract(value.unwrap_or_default()),
            other => AlterOp::Unknown(other),
        }
    }
}

/// What the existence check reads (Kafka's `ConfigResourceExistenceChecker`):
/// whether a topic exists, and whether a node id is a registered broker or
/// a controller, in the speculative state.
pub trait ResourceExistence {
    /// Whether topic `name` exists.
    fn topic_exists(&self, name: &str) -> bool;
    /// Whether `id` is a registered broker or a controller.
    fn node_exists(&self, id: i32) -> bool;
}

/// One resource of an IncrementalAlterConfigs request: (type id, name,
/// (key, op) in request order).
pub type IncrementalResource = (i8, String, Vec<(String, AlterOp)>);
/// One resource of an AlterConfigs request: (type id, name, (key, value)).
pub type LegacyResource = (i8, String, Vec<(String, Option<String>)>);

/// One resource's answer: (type, name, refusal or success).
pub type ResourceResult = (i8, String, Result<(), Refusal>);

/// The answer to a request and the records to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigsDecision {
    /// ConfigRecords of every resource that passed (none for validateOnly),
    /// then the ClearElrRecords they call for (see the module doc).
    pub records: Vec<Bytes>,
    /// One result per resource, in Kafka's answer order.
    pub results: Vec<ResourceResult>,
}

/// The speculative configs of an active controller (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigurationControl {
    configs: ConfigsImage,
    /// `eligible.leader.replicas.version` >= 1 (Kafka's
    /// `isElrFeatureEnabled`), as committed at activation.
    elr_enabled: bool,
    /// The `metadata.version` feature level, as committed at activation and
    /// then replayed (0 while none is known).
    metadata_level: i16,
}

/// Longest config value Kafka 4.4 accepts (UTF-16 units, Java's
/// `String.length`).
pub const MAX_CONFIG_VALUE_CHARS: usize = 32_767;

fn refuse(error: ResponseError, message: impl Into<String>) -> Result<(), Refusal> {
    Err((error, message.into()))
}

/// Java's `String.split(",")`: trailing empty strings dropped.
fn java_split(value: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = value.split(',').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// Kafka's `KafkaConfigSchema.isSplittable` and `getDefault` for a LIST
/// key: `Some(default)` when `key` is a LIST key of `resource_type`.
fn list_key_default(resource_type: i8, key: &str) -> Option<Option<&'static str>> {
    match resource_type {
        CONFIG_RESOURCE_TYPE_TOPIC => {
            topic_config(key).and_then(|d| (d.config_type == ConfigType::List).then_some(d.default))
        }
        CONFIG_RESOURCE_TYPE_BROKER => BROKER_LIST_CONFIGS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, d)| *d),
        _ => None,
    }
}

/// Splits the incoming resources into Kafka's early answers (unknown type,
/// duplicates, unsupported types) and the resources to decide, in order.
fn screen<T>(
    resources: Vec<(i8, String, T)>,
    results: &mut Vec<ResourceResult>,
) -> Vec<(i8, String, T)> {
    let mut seen: BTreeMap<(i8, String), bool> = BTreeMap::new();
    let mut kept: Vec<(i8, String, T)> = Vec::new();
    for (resource_type, name, changes) in resources {
        let known = matches!(
            resource_type,
            CONFIG_RESOURCE_TYPE_TOPIC
                | CONFIG_RESOURCE_TYPE_BROKER
                | CONFIG_RESOURCE_TYPE_BROKER_LOGGER
                | CONFIG_RESOURCE_TYPE_CLIENT_METRICS
                | CONFIG_RESOURCE_TYPE_GROUP
        );
        if !known {
            results.push((
                resource_type,
                name,
                refuse(
                    ResponseError::UnsupportedVersion,
                    format!("Unknown resource type {resource_type}."),
                ),
            ));
            continue;
        }
        let key = (resource_type, name.clone());
        match seen.get(&key) {
            Some(true) => continue,
            Some(false) => {
                seen.insert(key, true);
                kept.retain(|(t, n, _)| !(*t == resource_type && *n == name));
                results.push((
                    resource_type,
                    name,
                    refuse(ResponseError::InvalidRequest, "Duplicate resource."),
                ));
            }
            None => {
                seen.insert(key, false);
                kept.push((resource_type, name, changes));
            }
        }
    }
    let (decide, unsupported): (Vec<_>, Vec<_>) = kept.into_iter().partition(|(t, _, _)| {
        matches!(*t, CONFIG_RESOURCE_TYPE_TOPIC | CONFIG_RESOURCE_TYPE_BROKER)
    });
    for (resource_type, name, _) in unsupported {
        results.push((
            resource_type,
            name,
            refuse(
                ResponseError::InvalidRequest,
                format!("resource type {resource_type} is not served by this controller"),
            ),
        ));
    }
    decide
}

impl ConfigurationControl {
    /// The state of a controller becoming active over the committed `image`.
    pub fn activate(image: &MetadataImage) -> Self {
        Self {
            configs: image.configs().clone(),
            elr_enabled: image
                .feature_level("eligible.leader.replicas.version")
                .is_some_and(|l| l >= 1),
            metadata_level: image.feature_level(METADATA_VERSION_FEATURE).unwrap_or(0),
        }
    }

    /// Kafka's `MetadataVersion.isCordonedLogDirsSupported` of the
    /// speculative `metadata.version` (4.3-IV0, 30).
    fn cordoned_log_dirs_supported(&self) -> bool {
        MetadataVersion::from_feature_level(self.metadata_level)
            .is_some_and(MetadataVersion::is_cordoned_log_dirs_supported)
    }

    /// The speculative configs.
    pub fn configs(&self) -> &ConfigsImage {
        &self.configs
    }

    /// Replays records another manager built (Kafka replays every record
    /// into every manager): ConfigRecords are applied, a RemoveTopicRecord
    /// drops the configs of the topic `names` (the names before the
    /// decision) gives it. Records of this manager's own decisions were
    /// applied already; applying them again changes nothing.
    ///
    /// Returns whether any config changed (a ConfigRecord or a removed
    /// topic's configs), for whoever reads them.
    pub fn replay(&mut self, records: &[Bytes], names: &BTreeMap<uuid::Uuid, String>) -> bool {
        let mut changed = false;
        for value in records {
            let Ok(f) = FramedRecord::decode(value) else {
                continue;
            };
            match (f.api_key, f.version) {
                (FEATURE_LEVEL_RECORD_API_KEY, 0) => {
                    if let Ok(r) = FeatureLevelRecord::decode_message(&f.message)
                        && r.name == METADATA_VERSION_FEATURE
                    {
                        self.metadata_level = r.feature_level;
                    }
                }
                (CONFIG_RECORD_API_KEY, 0) => {
                    if let Ok(r) = ConfigRecord::decode_message(&f.message) {
                        self.configs.apply(&r);
                        changed = true;
                    }
                }
                (REMOVE_TOPIC_RECORD_API_KEY, 0) => {
                    if let Some(name) = RemoveTopicRecord::decode_message(&f.message)
                        .ok()
                        .and_then(|r| names.get(&r.topic_id))
                    {
                        self.configs
                            .remove_resource(CONFIG_RESOURCE_TYPE_TOPIC, name);
                        changed = true;
                    }
                }
                _ => {}
            }
        }
        changed
    }

    /// Kafka's `validateAlterConfig` for one resource: the validator on the
    /// merged configs, then the existence check.
    fn validate(
        &self,
        resource_type: i8,
        name: &str,
        records: &[ConfigRecord],
        implicitly_deleted: &[String],
        exists: &dyn ResourceExistence,
    ) -> Result<(), Refusal> {
        // Kafka 4.4's per-record checks of validateAlterConfig, in its order.
        for r in records {
            let min_isr = r.name == MIN_INSYNC_REPLICAS
                && r.resource_type == CONFIG_RESOURCE_TYPE_BROKER
                && self.elr_enabled;
            if min_isr && !r.resource_name.is_empty() {
                return refuse(
                    ResponseError::InvalidConfig,
                    "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
                );
            }
            if min_isr && r.value.is_none() {
                return refuse(
                    ResponseError::InvalidConfig,
                    "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
                );
            }
            if r.name == CORDONED_LOG_DIRS
                && r.resource_type == CONFIG_RESOURCE_TYPE_BROKER
                && !self.cordoned_log_dirs_supported()
            {
                return refuse(
                    ResponseError::InvalidConfig,
                    format!(
                        "The {CORDONED_LOG_DIRS} configuration value cannot be set because it requires metadata.version >= {}",
                        MetadataVersion::IBP_4_3_IV0
                    ),
                );
            }
            if r.value
                .as_ref()
                .is_some_and(|v| v.encode_utf16().count() > MAX_CONFIG_VALUE_CHARS)
            {
                return refuse(
                    ResponseError::InvalidConfig,
                    "The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes.",
                );
            }
        }
        let mut all = self.configs.of(resource_type, name);
        for r in records {
            match &r.value {
                Some(v) => all.insert(r.name.clone(), v.clone()),
                None => all.remove(&r.name),
            };
        }
        for k in implicitly_deleted {
            if k == MIN_INSYNC_REPLICAS
                && resource_type == CONFIG_RESOURCE_TYPE_BROKER
                && self.elr_enabled
            {
                return refuse(
                    ResponseError::InvalidConfig,
                    if name.is_empty() {
                        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
                    } else {
                        "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
                    },
                );
            }
            all.remove(k);
        }
        if resource_type == CONFIG_RESOURCE_TYPE_TOPIC {
            if name.is_empty() {
                return refuse(
                    ResponseError::InvalidRequest,
                    "Default topic resources are not allowed.",
                );
            }
            validate_topic_name(name).map_err(|m| (ResponseError::InvalidTopicException, m))?;
            check_log_config(&all)?;
            if !exists.topic_exists(name) {
                return refuse(
                    ResponseError::UnknownTopicOrPartition,
                    format!("The topic '{name}' does not exist."),
                );
            }
        } else if !name.is_empty() {
            let Ok(id) = name.parse::<i32>() else {
                return refuse(
                    ResponseError::InvalidRequest,
                    "Unable to parse broker name as a base 10 number.",
                );
            };
            if id < 0 {
                return refuse(ResponseError::InvalidRequest, "Invalid negative broker ID.");
            }
            if !exists.node_exists(id) {
                return refuse(
                    ResponseError::BrokerIdNotRegistered,
                    format!("No node with id {id} found."),
                );
            }
        }
        Ok(())
    }

    /// Applies accepted records to the speculative state (unless
    /// validate-only) and collects them.
    fn accept(
        &mut self,
        records: Vec<ConfigRecord>,
        validate_only: bool,
        out: &mut Vec<ConfigRecord>,
    ) {
        if validate_only {
            return;
        }
        for r in records {
            self.configs.apply(&r);
            out.push(r);
        }
    }

    /// The decision: the ConfigRecords, then the ClearElrRecords they call
    /// for (Kafka's `createClearElrRecordsAsNeeded` over its output records).
    fn decision(
        &self,
        accepted: Vec<ConfigRecord>,
        results: Vec<ResourceResult>,
    ) -> ConfigsDecision {
        let clear_elr: Vec<Bytes> = accepted
            .iter()
            .filter(|r| self.elr_enabled && r.name == MIN_INSYNC_REPLICAS)
            .map(|r| {
                let topic_name = if r.resource_type == CONFIG_RESOURCE_TYPE_TOPIC {
                    r.resource_name.clone()
                } else {
                    String::new()
                };
                ClearElrRecord { topic_name }.encode_framed()
            })
            .collect();
        let mut records: Vec<Bytes> = accepted.iter().map(ConfigRecord::encode_framed).collect();
        records.extend(clear_elr);
        ConfigsDecision { records, results }
    }

    /// IncrementalAlterConfigs (Kafka's `incrementalAlterConfigs`): for each
    /// resource (type id, name, (key, op) in request order; a key named
    /// twice keeps its last op) the checks of the module doc.
    pub fn incremental_alter(
        &mut self,
        resources: Vec<IncrementalResource>,
        validate_only: bool,
        exists: &dyn ResourceExistence,
    ) -> ConfigsDecision {
        let mut results = Vec::new();
        let mut out = Vec::new();
        for (resource_type, name, changes) in screen(resources, &mut results) {
            let mut ops: BTreeMap<String, AlterOp> = BTreeMap::new();
            for (k, op) in changes {
                ops.insert(k, op);
            }
            let current = self.configs.of(resource_type, &name);
            let mut records = Vec::new();
            let mut failed = None;
            for (key, op) in ops {
                let old = current.get(&key).cloned();
                let new = match op {
                    AlterOp::Unknown(id) => {
                        failed = Some((
                            ResponseError::InvalidRequest,
                            format!("Unknown operation type {id}"),
                        ));
                        break;
                    }
                    AlterOp::Set(v) => v,
                    AlterOp::Delete => None,
                    AlterOp::Append(ref v) | AlterOp::Subtract(ref v) => {
                        let op_name = if matches!(op, AlterOp::Append(_)) {
                            "APPEND"
                        } else {
                            "SUBTRACT"
                        };
                        let Some(default) = list_key_default(resource_type, &key) else {
                            failed = Some((
                                ResponseError::InvalidConfig,
                                format!(
                                    "Can't {op_name} to key {key} because its type is not LIST."
                                ),
                            ));
                            break;
                        };
                        let base = old.clone().or(default.map(str::to_owned));
                        let mut parts: Vec<String> = base
                            .as_deref()
                            .map(|b| {
                                java_split(b)
                                    .into_iter()
                                    .filter(|p| !p.is_empty())
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default();
                        for item in java_split(v) {
                            if matches!(op, AlterOp::Append(_)) {
                                if !parts.iter().any(|p| p == item) {
                                    parts.push(item.to_owned());
                                }
                            } else if let Some(i) = parts.iter().position(|p| p == item) {
                                parts.remove(i);
                            }
                        }
                        Some(parts.join(","))
                    }
                };
                if old != new || resource_type == CONFIG_RESOURCE_TYPE_BROKER {
                    records.push(ConfigRecord {
                        resource_type,
                        resource_name: name.clone(),
                        name: key,
                        value: new,
                    });
                }
            }
            let result = match failed {
                Some(refusal) => Err(refusal),
                None => self.validate(resource_type, &name, &records, &[], exists),
            };
            if result.is_ok() {
                self.accept(records, validate_only, &mut out);
            }
            results.push((resource_type, name, result));
        }
        self.decision(out, results)
    }

    /// AlterConfigs (Kafka's `legacyAlterConfigs`): each resource's keys
    /// become exactly the given ones (a key not given is deleted), with the
    /// checks of the module doc.
    pub fn legacy_alter(
        &mut self,
        resources: Vec<LegacyResource>,
        validate_only: bool,
        exists: &dyn ResourceExistence,
    ) -> ConfigsDecision {
        let mut results = Vec::new();
        let mut out = Vec::new();
        for (resource_type, name, configs) in screen(resources, &mut results) {
            let wanted: BTreeMap<String, Option<String>> = configs.into_iter().collect();
            let current = self.configs.of(resource_type, &name);
            let mut records: Vec<ConfigRecord> = wanted
                .iter()
                .filter(|(k, v)| {
                    current.get(*k) != v.as_ref() || resource_type == CONFIG_RESOURCE_TYPE_BROKER
                })
                .map(|(k, v)| ConfigRecord {
                    resource_type,
                    resource_name: name.clone(),
                    name: k.clone(),
                    value: v.clone(),
                })
                .collect();
            let deleted: Vec<String> = current
                .keys()
                .filter(|k| !wanted.contains_key(*k))
                .cloned()
                .collect();
            let result = self.validate(resource_type, &name, &records, &deleted, exists);
            if result.is_ok() {
                records.extend(deleted.into_iter().map(|k| ConfigRecord {
                    resource_type,
                    resource_name: name.clone(),
                    name: k,
                    value: None,
                }));
                self.accept(records, validate_only, &mut out);
            }
            results.push((resource_type, name, result));
        }
        self.decision(out, results)
    }
}

/// The resources of an IncrementalAlterConfigs request, as
/// [`ConfigurationControl::incremental_alter`] takes them.
pub fn incremental_resources(request: &IncrementalAlterConfigsRequest) -> Vec<IncrementalResource> {
    request
        .resources
        .iter()
        .map(|r| {
            let changes = r
                .configs
                .iter()
                .map(|c| {
                    (
                        c.name.to_string(),
                        AlterOp::from_kafka(
                            c.config_operation,
                            c.value.as_ref().map(|v| v.to_string()),
                        ),
                    )
                })
                .collect();
            (r.resource_type, r.resource_name.to_string(), changes)
        })
        .collect()
}

/// The resources of an AlterConfigs request, as
/// [`ConfigurationControl::legacy_alter`] takes them.
pub fn legacy_resources(request: &AlterConfigsRequest) -> Vec<LegacyResource> {
    request
        .resources
        .iter()
        .map(|r| {
            let configs = r
                .configs
                .iter()
                .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                .collect();
            (r.resource_type, r.resource_name.to_string(), configs)
        })
        .collect()
}

fn error_parts(result: &Result<(), Refusal>) -> (i16, Option<StrBytes>) {
    match result {
        Ok(()) => (0, None),
        Err((e, m)) => (e.code(), Some(StrBytes::from_string(m.clone()))),
    }
}

/// The IncrementalAlterConfigs answer of `results` (one entry each; Kafka
/// leaves the message null on success).
pub fn incremental_response(results: &[ResourceResult]) -> ResponseKind {
    ResponseKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse::default().with_responses(
            results
                .iter()
                .map(|(t, n, r)| {
                    let (code, message) = error_parts(r);
                    incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                        .with_error_code(code)
                        .with_error_message(message)
                        .with_resource_type(*t)
                        .with_resource_name(StrBytes::from_string(n.clone()))
                })
                .collect(),
        ),
    )
}

/// The AlterConfigs answer of `results`.
pub fn legacy_response(results: &[ResourceResult]) -> ResponseKind {
    ResponseKind::AlterConfigs(
        AlterConfigsResponse::default().with_responses(
            results
                .iter()
                .map(|(t, n, r)| {
                    let (code, message) = error_parts(r);
                    alter_configs_response::AlterConfigsResourceResponse::default()
                        .with_error_code(code)
                        .with_error_message(message)
                        .with_resource_type(*t)
                        .with_resource_name(StrBytes::from_string(n.clone()))
                })
                .collect(),
        ),
    )
}

/// The answer refusing every resource of a config request with `refusal`
/// (Kafka's `getErrorResponse`: NOT_CONTROLLER when not active); `None`
/// for another request.
pub fn refused_response(request: &RequestKind, refusal: &Refusal) -> Option<ResponseKind> {
    match request {
        RequestKind::IncrementalAlterConfigs(r) => Some(incremental_response(
            &r.resources
                .iter()
                .map(|x| {
                    (
                        x.resource_type,
                        x.resource_name.to_string(),
                        Err(refusal.clone()),
                    )
                })
                .collect::<Vec<_>>(),
        )),
        RequestKind::AlterConfigs(r) => Some(legacy_response(
            &r.resources
                .iter()
                .map(|x| {
                    (
                        x.resource_type,
                        x.resource_name.to_string(),
                        Err(refusal.clone()),
                    )
                })
                .collect::<Vec<_>>(),
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "configs_tests.rs"]
mod tests;
