//! KIP-919 controller registration, both sides, without I/O.
//!
//! - [`RegistrationManager`] is Kafka's `ControllerRegistrationManager`: once
//!   this node knows the active controller (the Raft leader), has caught up
//!   with the committed log and sees a `metadata.version` of 3.7-IV0 or later
//!   in its image, it asks the active controller to register it
//!   (ControllerRegistration, API 70) with its id, an incarnation id drawn
//!   once per process start, its controller listeners and its supported
//!   features. One request at a time; a failure is retried after an
//!   exponential backoff (100 ms doubling to 120 s, 2 % jitter, as Kafka's
//!   `ExponentialBackoff(100, 2, 120000, 0.02)`). A success is not taken as
//!   registered: the manager waits for the committed RegisterControllerRecord
//!   in its own image, as Kafka does. It registers again when the image holds
//!   no registration of its id or one of another incarnation (a restart), and
//!   not when only the leader changes.
//! - [`validate_request`] is the active controller's side (Kafka's
//!   `ClusterControlManager.registerController`): the record to append, or
//!   the error to answer.
//!
//! Owns the decision of when to send and what to write; it must not send,
//! append or read the log (the server's event loop does, and passes the
//! image in).

use kafka_protocol::{error::ResponseError, messages::ControllerRegistrationRequest};

use super::{image::MetadataImage, records::RegisterControllerRecord};

/// Lowest `metadata.version` feature level with controller registration
/// (3.7-IV0, Kafka's `MetadataVersion.isControllerRegistrationSupported`).
pub const CONTROLLER_REGISTRATION_MIN_LEVEL: i16 = 15;
/// First retry delay after a failed registration (ms).
pub const INITIAL_BACKOFF_MS: u64 = 100;
/// Longest retry delay (ms).
pub const MAX_BACKOFF_MS: u64 = 120_000;
/// Relative jitter applied to each retry delay (± this fraction).
pub const BACKOFF_JITTER: f64 = 0.02;

/// Kafka's `SecurityProtocol` ids a listener may carry (PLAINTEXT, SSL,
/// SASL_PLAINTEXT, SASL_SSL).
const SECURITY_PROTOCOLS: std::ops::RangeInclusive<i16> = 0..=3;

/// Kafka's name of a `SecurityProtocol` id, `None` for an unknown id.
pub fn security_protocol_name(id: i16) -> Option<&'static str> {
    Some(match id {
        0 => "PLAINTEXT",
        1 => "SSL",
        2 => "SASL_PLAINTEXT",
        3 => "SASL_SSL",
        _ => return None,
    })
}

/// The active controller as the registering node sees it: its id and the
/// Raft epoch it leads.
pub type ActiveController = (i32, i32);

/// What the node knows when the manager is asked whether to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// The active controller, if known.
    pub leader: Option<ActiveController>,
    /// Whether this node's image has applied everything committed (the
    /// high watermark is known and reached).
    pub caught_up: bool,
}

/// A ControllerRegistration request to send to the active controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// Tag to give back with the answer ([`RegistrationManager::on_response`]).
    pub tag: u64,
    /// Node id of the active controller to send it to.
    pub leader_id: i32,
    /// The request (API 70, version 0).
    pub request: ControllerRegistrationRequest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    tag: u64,
    leader: ActiveController,
}

/// Kafka's `ControllerRegistrationManager`, sans I/O (see the module doc).
#[derive(Debug, Clone)]
pub struct RegistrationManager {
    record: RegisterControllerRecord,
    pending: Option<Pending>,
    /// An active controller answered success: the record is committed and
    /// will reach the image; do not send again until the image says
    /// otherwise.
    acknowledged: bool,
    next_tag: u64,
    failed_rpcs: u32,
    successful_rpcs: u64,
    not_before_ms: u64,
}

impl RegistrationManager {
    /// A manager registering `record` (this node's id, incarnation,
    /// listeners and supported features).
    pub fn new(record: RegisterControllerRecord) -> Self {
        Self {
            record,
            pending: None,
            acknowledged: false,
            next_tag: 1,
            failed_rpcs: 0,
            successful_rpcs: 0,
            not_before_ms: 0,
        }
    }

    /// What this node registers.
    pub fn record(&self) -> &RegisterControllerRecord {
        &self.record
    }

    /// Whether `image` holds this process's registration (same id and
    /// incarnation).
    pub fn is_registered(&self, image: &MetadataImage) -> bool {
        image
            .controllers()
            .get(&self.record.controller_id)
            .is_some_and(|r| r.incarnation_id == self.record.incarnation_id)
    }

    /// Successful registration answers received.
    pub fn successful_rpcs(&self) -> u64 {
        self.successful_rpcs
    }

    /// Failures since the last success (drives the backoff).
    pub fn failed_rpcs(&self) -> u32 {
        self.failed_rpcs
    }

    /// The request to send now, if any: none while registered in `image`,
    /// while no leader is known or the image is behind the high watermark,
    /// before `metadata.version` 3.7-IV0, while a request to the same active
    /// controller is in flight or acknowledged, or during a backoff. A
    /// request in flight to a former leader is abandoned (its late answer is
    /// ignored) and the new leader is asked at once.
    pub fn poll(
        &mut self,
        now_ms: u64,
        situation: Situation,
        image: &MetadataImage,
    ) -> Option<Outgoing> {
        if self.is_registered(image) {
            self.acknowledged = false;
            return None;
        }
        let leader = situation.leader?;
        if !situation.caught_up
            || self.acknowledged
            || image
                .feature_level(super::records::METADATA_VERSION_FEATURE)
                .is_none_or(|l| l < CONTROLLER_REGISTRATION_MIN_LEVEL)
        {
            return None;
        }
        match self.pending {
            Some(p) if p.leader == leader => return None,
            Some(_) => self.pending = None,
            None if now_ms < self.not_before_ms => return None,
            None => {}
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        self.pending = Some(Pending { tag, leader });
        Some(Outgoing {
            tag,
            leader_id: leader.0,
            request: self.record.to_request(),
        })
    }

    /// Takes the answer to request `tag`: `Ok(())` for error code 0, or the
    /// reason it failed (an error code, a timeout, a lost connection).
    /// Answers to abandoned requests are ignored. A failure schedules the
    /// next attempt after the backoff, `jitter` in `[-1, 1]` scaling
    /// [`BACKOFF_JITTER`]. Returns the retry delay (ms) after a failure.
    pub fn on_response(
        &mut self,
        tag: u64,
        outcome: Result<(), String>,
        now_ms: u64,
        jitter: f64,
    ) -> Option<u64> {
        if self.pending.is_none_or(|p| p.tag != tag) {
            return None;
        }
        self.pending = None;
        match outcome {
            Ok(()) => {
                self.successful_rpcs += 1;
                self.failed_rpcs = 0;
                self.acknowledged = true;
                None
            }
            Err(_) => {
                let delay = backoff_ms(self.failed_rpcs, jitter);
                self.failed_rpcs = self.failed_rpcs.saturating_add(1);
                self.not_before_ms = now_ms + delay;
                Some(delay)
            }
        }
    }

    /// When the backoff running at `now_ms` ends (ms): `None` when none runs
    /// (it ended, or a request is in flight or acknowledged), so that a
    /// caller waking up at this time never spins on a past deadline.
    pub fn next_deadline_ms(&self, now_ms: u64) -> Option<u64> {
        (self.pending.is_none() && !self.acknowledged && self.not_before_ms > now_ms)
            .then_some(self.not_before_ms)
    }
}

/// Kafka's `ExponentialBackoff(100, 2, 120000, 0.02).backoff(failures)`:
/// 100 ms × 2^failures, at most 120 s, times `1 + jitter × 0.02`.
pub fn backoff_ms(failures: u32, jitter: f64) -> u64 {
    let base = INITIAL_BACKOFF_MS
        .saturating_mul(1u64 << failures.min(20))
        .min(MAX_BACKOFF_MS) as f64;
    (base * (1.0 + jitter.clamp(-1.0, 1.0) * BACKOFF_JITTER)).round() as u64
}

/// The active controller's check of a ControllerRegistration request (Kafka's
/// `ClusterControlManager.registerController`), given the finalized
/// `metadata.version` level of its image: the RegisterControllerRecord to
/// append, or the error code and message to answer.
///
/// Errors: UNSUPPORTED_VERSION below 3.7-IV0 (Kafka's message);
/// INVALID_REQUEST for a negative controller id, an unknown security
/// protocol or a listener name given twice (Kafka keys listeners by name).
pub fn validate_request(
    request: &ControllerRegistrationRequest,
    metadata_version: Option<i16>,
) -> Result<RegisterControllerRecord, (ResponseError, String)> {
    if metadata_version.is_none_or(|l| l < CONTROLLER_REGISTRATION_MIN_LEVEL) {
        return Err((
            ResponseError::UnsupportedVersion,
            "The current MetadataVersion is too old to support controller registrations.".into(),
        ));
    }
    let invalid = |message: String| Err((ResponseError::InvalidRequest, message));
    if request.controller_id < 0 {
        return invalid(format!(
            "controller id {} is not a valid node id",
            request.controller_id
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for l in &request.listeners {
        if !SECURITY_PROTOCOLS.contains(&l.security_protocol) {
            return invalid(format!(
                "listener {} has unknown security protocol id {}",
                &*l.name, l.security_protocol
            ));
        }
        if !names.insert(l.name.to_string()) {
            return invalid(format!("listener {} is given twice", &*l.name));
        }
    }
    Ok(RegisterControllerRecord::from_request(request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{
        ControllerEndpoint, ControllerFeature, FeatureLevelRecord, METADATA_VERSION_FEATURE,
    };

    fn record(incarnation: u128) -> RegisterControllerRecord {
        RegisterControllerRecord {
            controller_id: 1,
            incarnation_id: uuid::Uuid::from_u128(incarnation),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: "c-1".into(),
                port: 9093,
                security_protocol: 0,
            }],
            features: vec![ControllerFeature {
                name: "kraft.version".into(),
                min_supported_version: 0,
                max_supported_version: 1,
            }],
        }
    }

    fn image_at(level: Option<i16>, registered: Option<u128>) -> MetadataImage {
        let mut image = MetadataImage::default();
        if let Some(level) = level {
            let r = FeatureLevelRecord {
                name: METADATA_VERSION_FEATURE.into(),
                feature_level: level,
            };
            image.apply_record(0, &r.encode_framed()).expect("applies");
        }
        if let Some(incarnation) = registered {
            image
                .apply_record(1, &record(incarnation).encode_framed())
                .expect("applies");
        }
        image
    }

    const LEADER_2: Situation = Situation {
        leader: Some((2, 5)),
        caught_up: true,
    };

    #[test]
    fn a_caught_up_node_that_sees_a_leader_and_metadata_version_3_7_sends_its_registration() {
        let mut m = RegistrationManager::new(record(7));
        let image = image_at(Some(27), None);
        let out = m.poll(0, LEADER_2, &image).expect("sends");
        assert_eq!(out.leader_id, 2);
        assert_eq!(out.request.controller_id, 1);
        assert_eq!(out.request.incarnation_id, uuid::Uuid::from_u128(7));
        assert_eq!(&*out.request.listeners[0].host, "c-1");
        // One at a time.
        assert_eq!(m.poll(1, LEADER_2, &image), None);
    }

    #[test]
    fn nothing_is_sent_without_leader_catch_up_or_a_metadata_version_with_registrations() {
        let mut m = RegistrationManager::new(record(7));
        let no_leader = Situation {
            leader: None,
            caught_up: true,
        };
        let behind = Situation {
            leader: Some((2, 5)),
            caught_up: false,
        };
        assert_eq!(m.poll(0, no_leader, &image_at(Some(27), None)), None);
        assert_eq!(m.poll(0, behind, &image_at(Some(27), None)), None);
        assert_eq!(m.poll(0, LEADER_2, &image_at(None, None)), None);
        // 3.6-IV2 (14) predates KIP-919; 3.7-IV0 (15) has it.
        assert_eq!(m.poll(0, LEADER_2, &image_at(Some(14), None)), None);
        assert!(m.poll(0, LEADER_2, &image_at(Some(15), None)).is_some());
    }

    #[test]
    fn a_success_waits_for_the_image_and_a_registration_of_another_incarnation_is_replaced() {
        let mut m = RegistrationManager::new(record(7));
        let empty = image_at(Some(27), None);
        let out = m.poll(0, LEADER_2, &empty).expect("sends");
        assert_eq!(m.on_response(out.tag, Ok(()), 10, 0.0), None);
        // Acknowledged: committed, on its way to our image; no second record.
        assert_eq!(m.poll(20, LEADER_2, &empty), None);
        let ours = image_at(Some(27), Some(7));
        assert!(m.is_registered(&ours));
        assert_eq!(m.poll(30, LEADER_2, &ours), None);
        // A leader change alone does not re-register.
        let leader_3 = Situation {
            leader: Some((3, 6)),
            caught_up: true,
        };
        assert_eq!(m.poll(40, leader_3, &ours), None);
        // The image names another incarnation of our id (as after a restart).
        let theirs = image_at(Some(27), Some(8));
        assert!(!m.is_registered(&theirs));
        assert!(m.poll(50, leader_3, &theirs).is_some());
    }

    #[test]
    fn failures_back_off_exponentially_and_a_new_leader_is_asked_at_once() {
        let mut m = RegistrationManager::new(record(7));
        let image = image_at(Some(27), None);
        let first = m.poll(0, LEADER_2, &image).expect("sends");
        let delay = m.on_response(first.tag, Err("NOT_CONTROLLER".into()), 1_000, 0.0);
        assert_eq!(delay, Some(100));
        assert_eq!(m.next_deadline_ms(1_000), Some(1_100));
        assert_eq!(m.poll(1_099, LEADER_2, &image), None);
        // A past deadline is no deadline (no busy wake-ups while, say, no
        // leader is known).
        assert_eq!(m.next_deadline_ms(1_100), None);
        let second = m.poll(1_100, LEADER_2, &image).expect("retries");
        assert_eq!(
            m.on_response(second.tag, Err("timeout".into()), 2_000, 0.0),
            Some(200)
        );
        assert_eq!(m.failed_rpcs(), 2);
        // In flight to leader 2 when leader 3 takes over: ask 3 now, and the
        // late answer of 2 changes nothing.
        let third = m.poll(2_200, LEADER_2, &image).expect("retries");
        let leader_3 = Situation {
            leader: Some((3, 6)),
            caught_up: true,
        };
        let fourth = m
            .poll(2_201, leader_3, &image)
            .expect("asks the new leader");
        assert_eq!(fourth.leader_id, 3);
        assert_eq!(
            m.on_response(third.tag, Err("late".into()), 2_300, 0.0),
            None
        );
        assert_eq!(m.on_response(fourth.tag, Ok(()), 2_400, 0.0), None);
        assert_eq!((m.failed_rpcs(), m.successful_rpcs()), (0, 1));
    }

    #[test]
    fn the_backoff_is_kafkas_exponential_backoff() {
        assert_eq!(backoff_ms(0, 0.0), 100);
        assert_eq!(backoff_ms(1, 0.0), 200);
        assert_eq!(backoff_ms(10, 0.0), 102_400);
        assert_eq!(backoff_ms(11, 0.0), 120_000);
        assert_eq!(backoff_ms(40, 0.0), 120_000);
        assert_eq!(backoff_ms(0, 1.0), 102);
        assert_eq!(backoff_ms(0, -1.0), 98);
    }

    #[test]
    fn the_active_controller_refuses_old_metadata_versions_and_malformed_listeners() {
        let request = record(7).to_request();
        let (error, message) = validate_request(&request, Some(14)).expect_err("3.6");
        assert_eq!(error, ResponseError::UnsupportedVersion);
        assert!(message.contains("too old"), "{message}");
        assert!(validate_request(&request, None).is_err());
        assert_eq!(
            validate_request(&request, Some(27)).expect("valid"),
            record(7)
        );

        let mut bad = request.clone();
        bad.listeners[0].security_protocol = 9;
        let (error, message) = validate_request(&bad, Some(27)).expect_err("protocol 9");
        assert_eq!(error, ResponseError::InvalidRequest);
        assert!(message.contains("security protocol id 9"), "{message}");

        let mut twice = request.clone();
        twice.listeners.push(twice.listeners[0].clone());
        let (_, message) = validate_request(&twice, Some(27)).expect_err("twice");
        assert!(message.contains("CONTROLLER is given twice"), "{message}");

        let mut negative = request;
        negative.controller_id = -1;
        assert!(validate_request(&negative, Some(27)).is_err());
    }
}
