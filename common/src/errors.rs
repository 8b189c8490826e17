//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`): the
//! `kafka-protocol` crate's [`ResponseError`] re-exported, constants for the
//! codes we answer and read by name, and Kafka's UPPER_SNAKE name of a code
//! (`kafka-protocol` names them in CamelCase). Pure.

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
};

pub use kafka_protocol::ResponseError;

/// No error.
pub const NONE: i16 = 0;
/// `NOT_LEADER_OR_FOLLOWER` (6): ask the leader (retriable).
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
/// `REQUEST_TIMED_OUT` (7): for AddRaftVoter, not caught up or another change
/// pending (retriable).
pub const REQUEST_TIMED_OUT: i16 = 7;
/// `UNSUPPORTED_VERSION` (35).
pub const UNSUPPORTED_VERSION: i16 = 35;
/// `INVALID_REQUEST` (42).
pub const INVALID_REQUEST: i16 = 42;
/// `INCONSISTENT_CLUSTER_ID` (104).
pub const INCONSISTENT_CLUSTER_ID: i16 = 104;
/// `DUPLICATE_VOTER` (126, KIP-853).
pub const DUPLICATE_VOTER: i16 = 126;
/// `VOTER_NOT_FOUND` (127, KIP-853).
pub const VOTER_NOT_FOUND: i16 = 127;
/// `CONTROLLER_ID_NOT_REGISTERED` (136, KIP-1312, Kafka 4.4): UnregisterController
/// named a controller without a registration.
pub const CONTROLLER_ID_NOT_REGISTERED: i16 = 136;

/// Kafka's name of an error code (`Errors.java`), e.g. 7 →
/// `REQUEST_TIMED_OUT`; `NONE` for 0 and `UNKNOWN` for a code Kafka does not
/// define.
pub fn error_name(code: i16) -> &'static str {
    if code == NONE {
        return "NONE";
    }
    if code == CONTROLLER_ID_NOT_REGISTERED {
        // New in Kafka 4.4; kafka-protocol 0.18 has no name for it.
        return "CONTROLLER_ID_NOT_REGISTERED";
    }
    let Some(error) = ResponseError::try_from_code(code) else {
        return "NONE";
    };
    if matches!(error, ResponseError::Unknown(_)) {
        return "UNKNOWN";
    }
    // kafka-protocol names errors in CamelCase; Kafka's names are the same in
    // UPPER_SNAKE. Each known code is converted once and kept (a bounded set).
    static NAMES: OnceLock<Mutex<HashMap<i16, &'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut names = match names.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    names.entry(code).or_insert_with(|| {
        let camel = error.to_string();
        let mut snake = String::with_capacity(camel.len() + 8);
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_uppercase());
        }
        Box::leak(snake.into_boxed_str())
    })
}

/// Whether Kafka marks `code` retriable (its exception extends
/// `RetriableException`: REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, …).
pub fn is_retriable(code: i16) -> bool {
    ResponseError::try_from_code(code).is_some_and(|e| e.is_retriable())
}

#[cfg(test)]
mod tests {
    use super::*;

    // From controller/tests/wire_admin.rs (the admin module's copy).
    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(7), "REQUEST_TIMED_OUT");
        assert_eq!(error_name(35), "UNSUPPORTED_VERSION");
        assert_eq!(error_name(104), "INCONSISTENT_CLUSTER_ID");
        assert_eq!(error_name(126), "DUPLICATE_VOTER");
        assert_eq!(error_name(127), "VOTER_NOT_FOUND");
        // Kafka 4.4.0's Errors.CONTROLLER_ID_NOT_REGISTERED.code() is 136
        // (controller/tests/golden/unregister-controller-golden.jsh).
        assert_eq!(error_name(136), "CONTROLLER_ID_NOT_REGISTERED");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(9999), "UNKNOWN");
    }

    #[test]
    fn the_constants_are_kafka_protocols_codes() {
        for (code, error) in [
            (NOT_LEADER_OR_FOLLOWER, ResponseError::NotLeaderOrFollower),
            (REQUEST_TIMED_OUT, ResponseError::RequestTimedOut),
            (UNSUPPORTED_VERSION, ResponseError::UnsupportedVersion),
            (INVALID_REQUEST, ResponseError::InvalidRequest),
            (
                INCONSISTENT_CLUSTER_ID,
                ResponseError::InconsistentClusterId,
            ),
            (DUPLICATE_VOTER, ResponseError::DuplicateVoter),
            (VOTER_NOT_FOUND, ResponseError::VoterNotFound),
        ] {
            assert_eq!(code, error.code(), "{error:?}");
        }
        assert!(is_retriable(REQUEST_TIMED_OUT));
        assert!(is_retriable(NOT_LEADER_OR_FOLLOWER));
        assert!(!is_retriable(DUPLICATE_VOTER));
    }
}
