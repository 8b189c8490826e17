//! Kafka 4.4's topic configuration keys (`LogConfig.configKeys()`, the
//! `TopicConfig` constants) with their types, defaults and validators, and
//! the checks Kafka's controller runs before it writes a topic's configs
//! (`ControllerConfigurationValidator` + `LogConfig.validate`), with
//! Kafka's messages.
//!
//! The table was read off Kafka 4.4.0's classes with jshell
//! (`LogConfig.configKeys()`: name, type, default, validator) and the
//! messages by calling `LogConfig.validate` with bad values. Not checked
//! here: the tiered-storage rules that need the brokers' remote-storage
//! setting (`remote.storage.enable` and friends are only type-checked).
//!
//! Owns the table and the checks; it must not read or write state.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;

use super::cluster_control::Refusal;

/// A config value's type (Kafka's `ConfigDef.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// `true` or `false`, any case.
    Boolean,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    Long,
    /// A double.
    Double,
    /// A string.
    String,
    /// A comma-separated list (APPEND and SUBTRACT apply).
    List,
}

impl ConfigType {
    fn name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::Int => "INT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::String => "STRING",
            ConfigType::List => "LIST",
        }
    }
}

/// A value's validator (Kafka's `ConfigDef.Validator`s used by `LogConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    /// None.
    Any,
    /// `Range.atLeast(min)`.
    AtLeast(i64),
    /// `Range.between(min, max)`.
    Between(i64, i64),
    /// `Range.between(0, 1)` on a double.
    DoubleBetween(f64, f64),
    /// gzip's level: 1 to 9, or -1.
    GzipLevel,
    /// `ValidString.in(...)`, case-sensitive.
    OneOf(&'static [&'static str]),
    /// `ValidList.in(...)`: every element one of these.
    ListOf(&'static [&'static str]),
    /// `ThrottledReplicaListValidator`: `*` or `partition:broker,...`.
    ThrottledReplicas,
}

/// One topic configuration key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopicConfigDef {
    /// The key, e.g. `retention.ms`.
    pub name: &'static str,
    /// Its type.
    pub config_type: ConfigType,
    /// Kafka's default as text (`None`: no default).
    pub default: Option<&'static str>,
    /// Its validator.
    pub validator: Validator,
}

const fn def(
    name: &'static str,
    config_type: ConfigType,
    default: Option<&'static str>,
    validator: Validator,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        config_type,
        default,
        validator,
    }
}

use ConfigType::{Boolean, Double, Int, List, Long, String as Str};
use Validator::{
    Any, AtLeast, Between, DoubleBetween, GzipLevel, ListOf, OneOf, ThrottledReplicas,
};

const LONG_MAX: &str = "9223372036854775807";

/// Every topic configuration key of Kafka 4.4 (`LogConfig.configKeys()`),
/// by name.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    def(
        "cleanup.policy",
        List,
        Some("delete"),
        ListOf(&["compact", "delete"]),
    ),
    def("compression.gzip.level", Int, Some("-1"), GzipLevel),
    def("compression.lz4.level", Int, Some("9"), Between(1, 17)),
    def(
        "compression.type",
        Str,
        Some("producer"),
        OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
    ),
    def(
        "compression.zstd.level",
        Int,
        Some("3"),
        Between(-131072, 22),
    ),
    def("delete.retention.ms", Long, Some("86400000"), AtLeast(0)),
    def(
        "errors.deadletterqueue.group.enable",
        Boolean,
        Some("false"),
        Any,
    ),
    def("file.delete.delay.ms", Long, Some("60000"), AtLeast(0)),
    def("flush.messages", Long, Some(LONG_MAX), AtLeast(1)),
    def("flush.ms", Long, Some(LONG_MAX), AtLeast(0)),
    def(
        "follower.replication.throttled.replicas",
        List,
        Some(""),
        ThrottledReplicas,
    ),
    def("index.interval.bytes", Int, Some("4096"), AtLeast(0)),
    def("internal.segment.bytes", Int, None, Any),
    def(
        "leader.replication.throttled.replicas",
        List,
        Some(""),
        ThrottledReplicas,
    ),
    def("local.retention.bytes", Long, Some("-2"), AtLeast(-2)),
    def("local.retention.ms", Long, Some("-2"), AtLeast(-2)),
    def("max.compaction.lag.ms", Long, Some(LONG_MAX), AtLeast(1)),
    def(
        "max.decompressed.message.bytes",
        Int,
        Some("2147483639"),
        Between(1, 2147483639),
    ),
    def("max.message.bytes", Int, Some("1048588"), AtLeast(0)),
    def(
        "message.timestamp.after.max.ms",
        Long,
        Some("3600000"),
        AtLeast(0),
    ),
    def(
        "message.timestamp.before.max.ms",
        Long,
        Some(LONG_MAX),
        AtLeast(0),
    ),
    def(
        "message.timestamp.type",
        Str,
        Some("CreateTime"),
        OneOf(&["CreateTime", "LogAppendTime"]),
    ),
    def(
        "min.cleanable.dirty.ratio",
        Double,
        Some("0.5"),
        DoubleBetween(0.0, 1.0),
    ),
    def("min.compaction.lag.ms", Long, Some("0"), AtLeast(0)),
    def("min.insync.replicas", Int, Some("1"), AtLeast(1)),
    def("preallocate", Boolean, Some("false"), Any),
    def("remote.copy.lag.bytes", Long, Some("-1"), AtLeast(-1)),
    def("remote.copy.lag.ms", Long, Some("0"), AtLeast(-1)),
    def("remote.log.copy.disable", Boolean, Some("false"), Any),
    def("remote.log.delete.on.disable", Boolean, Some("false"), Any),
    def("remote.storage.enable", Boolean, Some("false"), Any),
    def("retention.bytes", Long, Some("-1"), Any),
    def("retention.ms", Long, Some("604800000"), AtLeast(-1)),
    def("segment.bytes", Int, Some("1073741824"), AtLeast(1048576)),
    def("segment.index.bytes", Int, Some("10485760"), AtLeast(4)),
    def("segment.jitter.ms", Long, Some("0"), AtLeast(0)),
    def("segment.ms", Long, Some("604800000"), AtLeast(1)),
    def(
        "unclean.leader.election.enable",
        Boolean,
        Some("false"),
        Any,
    ),
];

/// The definition of topic config `name`, if Kafka 4.4 has one.
pub fn topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Broker configuration keys of type LIST (Kafka 4.4's
/// `KafkaConfig.configDef()`) with their defaults: the broker keys APPEND
/// and SUBTRACT apply to (Kafka's `KafkaConfigSchema.isSplittable`).
pub const BROKER_LIST_CONFIGS: &[(&str, Option<&str>)] = &[
    ("advertised.listeners", None),
    ("config.providers", Some("")),
    ("controller.listener.names", None),
    ("controller.quorum.bootstrap.servers", Some("")),
    ("controller.quorum.voters", Some("")),
    ("cordoned.log.dirs", Some("")),
    ("early.start.listeners", None),
    ("group.consumer.assignors", Some("uniform,range")),
    (
        "group.coordinator.rebalance.protocols",
        Some("classic,consumer,streams"),
    ),
    ("group.share.assignors", Some("simple")),
    ("group.streams.assignors", Some("sticky")),
    ("group.streams.rack.aware.assignment.tags", Some("")),
    ("kafka.metrics.reporters", Some("")),
    ("listeners", Some("PLAINTEXT://:9092")),
    ("log.cleanup.policy", Some("delete")),
    ("log.dir", Some("/tmp/kafka-logs")),
    ("log.dirs", None),
    (
        "metric.reporters",
        Some("org.apache.kafka.common.metrics.JmxReporter"),
    ),
    ("process.roles", None),
    ("sasl.enabled.mechanisms", Some("GSSAPI")),
    ("sasl.kerberos.principal.to.local.rules", Some("DEFAULT")),
    ("sasl.oauthbearer.expected.audience", Some("")),
    ("ssl.cipher.suites", Some("")),
    ("ssl.enabled.protocols", Some("TLSv1.2,TLSv1.3")),
];

fn invalid_config(message: String) -> Refusal {
    (ResponseError::InvalidConfig, message)
}

/// A parsed value, for the checks across keys.
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    Number(i64),
    Other,
}

/// Kafka's `ConfigDef.parseType` + the key's validator for one value.
fn parse_and_check(d: &TopicConfigDef, value: &str) -> Result<Parsed, Refusal> {
    let bad = |shown: &str, why: String| {
        invalid_config(format!(
            "Invalid value {shown} for configuration {}: {why}",
            d.name
        ))
    };
    let not_a_number = || {
        bad(
            value,
            format!("Not a number of type {}", d.config_type.name()),
        )
    };
    let trimmed = value.trim();
    let range = |n: i64| -> Result<(), Refusal> {
        match d.validator {
            AtLeast(min) if n < min => {
                Err(bad(&n.to_string(), format!("Value must be at least {min}")))
            }
            Between(min, _) if n < min => {
                Err(bad(&n.to_string(), format!("Value must be at least {min}")))
            }
            Between(_, max) if n > max => Err(bad(
                &n.to_string(),
                format!("Value must be no more than {max}"),
            )),
            GzipLevel if n != -1 && !(1..=9).contains(&n) => Err(bad(
                &n.to_string(),
                "Value must be between 1 and 9 or equal to -1".to_owned(),
            )),
            _ => Ok(()),
        }
    };
    match d.config_type {
        ConfigType::Boolean => {
            if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
                Ok(Parsed::Other)
            } else {
                Err(bad(
                    value,
                    "Expected value to be either true or false".to_owned(),
                ))
            }
        }
        ConfigType::Int => {
            let n: i32 = trimmed.parse().map_err(|_| not_a_number())?;
            range(i64::from(n))?;
            Ok(Parsed::Number(i64::from(n)))
        }
        ConfigType::Long => {
            let n: i64 = trimmed.parse().map_err(|_| not_a_number())?;
            range(n)?;
            Ok(Parsed::Number(n))
        }
        ConfigType::Double => {
            let x: f64 = trimmed.parse().map_err(|_| not_a_number())?;
            if let DoubleBetween(min, max) = d.validator {
                // Java prints a double with at least one decimal: 2.0.
                let shown = format!("{x:?}");
                if x < min {
                    return Err(bad(&shown, format!("Value must be at least {min}")));
                }
                if x > max {
                    return Err(bad(&shown, format!("Value must be no more than {max}")));
                }
            }
            Ok(Parsed::Other)
        }
        ConfigType::String => match d.validator {
            OneOf(allowed) if !allowed.contains(&trimmed) => Err(bad(
                trimmed,
                format!("String must be one of: {}", allowed.join(", ")),
            )),
            _ => Ok(Parsed::Other),
        },
        ConfigType::List => {
            let items = split_list(value);
            match d.validator {
                ListOf(allowed) => {
                    if let Some(item) = items.iter().find(|i| !allowed.contains(&i.as_str())) {
                        return Err(bad(
                            item,
                            format!("String must be one of: {}", allowed.join(", ")),
                        ));
                    }
                }
                ThrottledReplicas => {
                    let star = items.len() == 1 && items[0] == "*";
                    let pairs = items.iter().all(|i| {
                        i.split_once(':').is_some_and(|(p, b)| {
                            !p.is_empty()
                                && !b.is_empty()
                                && p.chars().all(|c| c.is_ascii_digit())
                                && b.chars().all(|c| c.is_ascii_digit())
                        })
                    });
                    if !star && !pairs {
                        return Err(bad(
                            &format!("[{}]", items.join(", ")),
                            format!(
                                "{} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
                                d.name
                            ),
                        ));
                    }
                }
                _ => {}
            }
            Ok(Parsed::Other)
        }
    }
}

/// Kafka's list parsing (`ConfigDef.parseType` for LIST): split on commas,
/// each element trimmed; an empty (or blank) value is the empty list.
pub fn split_list(value: &str) -> Vec<String> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| s.trim().to_owned()).collect()
}

/// The checks Kafka's controller runs on a topic's whole config set (the
/// committed keys with the request's changes applied, Kafka's
/// `ControllerConfigurationValidator.validate` for TOPIC without the name
/// check, then `LogConfig.validate`): INVALID_CONFIG for an unknown key
/// (`Unknown topic config name: K`), a value that does not parse as its
/// type or fails its validator (Kafka's `ConfigException` messages), or
/// `min.compaction.lag.ms` above `max.compaction.lag.ms`. CreateTopics
/// runs it through `topic_names::validate_topic_configs`.
pub fn check_log_config(configs: &BTreeMap<String, String>) -> Result<(), Refusal> {
    if let Some(unknown) = configs.keys().find(|k| topic_config(k).is_none()) {
        return Err(invalid_config(format!(
            "Unknown topic config name: {unknown}"
        )));
    }
    let mut numbers = BTreeMap::new();
    for (key, value) in configs {
        let d = topic_config(key).expect("unknown keys were refused above");
        if let Parsed::Number(n) = parse_and_check(d, value)? {
            numbers.insert(key.as_str(), n);
        }
    }
    let min_lag = numbers.get("min.compaction.lag.ms").copied().unwrap_or(0);
    let max_lag = numbers
        .get("max.compaction.lag.ms")
        .copied()
        .unwrap_or(i64::MAX);
    if min_lag > max_lag {
        return Err(invalid_config(format!(
            "conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pairs: &[(&str, &str)]) -> Result<(), Refusal> {
        check_log_config(
            &pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    fn message(pairs: &[(&str, &str)]) -> String {
        let (error, message) = check(pairs).expect_err("refused");
        assert_eq!(error, ResponseError::InvalidConfig, "{message}");
        message
    }

    /// Each message is the one Kafka 4.4's `LogConfig.validate` gave for the
    /// same input (jshell, see the module doc).
    #[test]
    fn bad_topic_configs_get_kafkas_messages() {
        for (pairs, expected) in [
            (
                &[("retention.ms", "abc")][..],
                "Invalid value abc for configuration retention.ms: Not a number of type LONG",
            ),
            (
                &[("retention.ms", "-2")],
                "Invalid value -2 for configuration retention.ms: Value must be at least -1",
            ),
            (
                &[("segment.bytes", "100")],
                "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576",
            ),
            (
                &[("segment.bytes", "99999999999")],
                "Invalid value 99999999999 for configuration segment.bytes: Not a number of type INT",
            ),
            (
                &[("min.cleanable.dirty.ratio", "2")],
                "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
            ),
            (
                &[("cleanup.policy", "foo")],
                "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete",
            ),
            (
                &[("compression.type", "GZIP")],
                "Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
            ),
            (
                &[("preallocate", "yes")],
                "Invalid value yes for configuration preallocate: Expected value to be either true or false",
            ),
            (
                &[("compression.gzip.level", "0")],
                "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
            ),
            (
                &[("compression.zstd.level", "23")],
                "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22",
            ),
            (&[("foo.bar", "1")], "Unknown topic config name: foo.bar"),
            (
                &[("leader.replication.throttled.replicas", "x")],
                "Invalid value [x] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
            ),
            (
                &[
                    ("min.compaction.lag.ms", "10"),
                    ("max.compaction.lag.ms", "5"),
                ],
                "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
            ),
            (
                &[("min.insync.replicas", "0")],
                "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
            ),
        ] {
            assert_eq!(message(pairs), expected);
        }
    }

    /// Values Kafka 4.4 accepts.
    #[test]
    fn good_topic_configs_pass() {
        for pairs in [
            &[("cleanup.policy", "")][..],
            &[("cleanup.policy", "compact,delete")],
            &[("preallocate", "TRUE")],
            &[("leader.replication.throttled.replicas", "*")],
            &[("leader.replication.throttled.replicas", " 0:1 , 1:2")],
            &[("retention.ms", " 100 ")],
            &[("retention.bytes", "-5")],
            &[("internal.segment.bytes", "5")],
            &[("unclean.leader.election.enable", "true")],
            &[("min.insync.replicas", "2"), ("segment.ms", "1")],
        ] {
            assert_eq!(check(pairs), Ok(()), "{pairs:?}");
        }
    }
}
