//! Topic name rules (Kafka's `org.apache.kafka.common.internals.Topic`) and
//! the hook that checks the configs given at topic creation.
//!
//! Owns these checks only; it must not look at the image.

use kafka_protocol::error::ResponseError;

use std::collections::BTreeMap;

use super::{cluster_control::Refusal, topic_config_defs::check_log_config};

/// Longest topic name (`Topic.MAX_NAME_LENGTH`).
pub const MAX_NAME_LENGTH: usize = 249;
/// The metadata topic (`Topic.CLUSTER_METADATA_TOPIC_NAME`), never created
/// by CreateTopics.
pub const CLUSTER_METADATA_TOPIC_NAME: &str = "__cluster_metadata";

/// Kafka's `Topic.validate`: `Err(message)` with
/// `InvalidTopicException`'s text for an empty name, `.` or `..`, a name
/// over 249 characters, or a character other than ASCII alphanumerics,
/// `.`, `_` and `-`.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_owned()
    } else if name == "." {
        "'.' is not allowed".to_owned()
    } else if name == ".." {
        "'..' is not allowed".to_owned()
    } else if name.chars().count() > MAX_NAME_LENGTH {
        format!("the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        )
    } else {
        return Ok(());
    };
    Err(format!("Topic name is invalid: {reason}"))
}

/// Kafka's `Topic.hasCollisionChars`: the name has `.` or `_`.
pub fn has_collision_chars(name: &str) -> bool {
    name.contains('.') || name.contains('_')
}

/// Kafka's `Topic.unifyCollisionChars`: `.` replaced by `_`.
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

/// Checks the configs given with a new topic, as `(name, value)` pairs (a
/// key named twice keeps its last value): INVALID_CONFIG `Null value not
/// supported for topic configs: K,...` for null values (Kafka's
/// `ControllerConfigurationValidator`), then Kafka 4.4's `LogConfig` checks
/// ([`check_log_config`]: unknown keys, bad values, with Kafka's messages).
pub fn validate_topic_configs(configs: &[(String, Option<String>)]) -> Result<(), Refusal> {
    let nulls: Vec<&str> = configs
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err((
            ResponseError::InvalidConfig,
            format!(
                "Null value not supported for topic configs: {}",
                nulls.join(",")
            ),
        ));
    }
    let map: BTreeMap<String, String> = configs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
        .collect();
    check_log_config(&map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_refused_with_kafkas_messages() {
        assert_eq!(
            validate_topic_name(""),
            Err("Topic name is invalid: the empty string is not allowed".into())
        );
        assert_eq!(
            validate_topic_name(".."),
            Err("Topic name is invalid: '..' is not allowed".into())
        );
        assert_eq!(
            validate_topic_name("a b"),
            Err("Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'".into())
        );
        let long = "x".repeat(250);
        assert!(
            validate_topic_name(&long)
                .expect_err("too long")
                .ends_with("is longer than the max allowed length 249")
        );
        assert_eq!(validate_topic_name(&"x".repeat(249)), Ok(()));
        assert_eq!(validate_topic_name("__consumer_offsets"), Ok(()));
        assert!(has_collision_chars("a.b") && !has_collision_chars("ab"));
        assert_eq!(unify_collision_chars("a.b_c"), "a_b_c");
        assert!(
            validate_topic_configs(&[("cleanup.policy".into(), Some("compact".into()))]).is_ok()
        );
        assert!(validate_topic_configs(&[("bad.key".into(), Some("1".into()))]).is_err());
        assert_eq!(
            validate_topic_configs(&[("retention.ms".into(), None)]),
            Err((
                ResponseError::InvalidConfig,
                "Null value not supported for topic configs: retention.ms".into()
            ))
        );
    }
}
