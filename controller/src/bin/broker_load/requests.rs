//! What one simulated Kafka 4.4 broker sends: its BrokerRegistration and
//! BrokerHeartbeat bodies, and the lifecycle that decides the heartbeat's
//! fields and when the next one goes out (Kafka's `BrokerLifecycleManager`).
//!
//! Owns the message fields and the STARTING → RECOVERY → RUNNING steps; it
//! must not do i/o or measure time (the runner in `main.rs` does).

use std::time::Duration;

use kafka_protocol::{
    messages::{
        BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
        broker_registration_request::{Feature, Listener},
    },
    protocol::StrBytes,
};

/// BrokerRegistration version sent: 4, the newest kafka-protocol 0.18
/// encodes (Kafka 4.4's brokers negotiate the newest the controller
/// advertises; v4 carries every field a broker fills here).
pub const REGISTRATION_VERSION: i16 = 4;
/// BrokerHeartbeat version sent: 1 (`OfflineLogDirs`, KIP-858), the newest
/// kafka-protocol 0.18 encodes.
pub const HEARTBEAT_VERSION: i16 = 1;
/// The pause between heartbeats while the broker catches up or becomes
/// ready to unfence: 10 ms, as Kafka's `BrokerLifecycleManager` schedules
/// them in STARTING.
pub const CATCH_UP_PAUSE: Duration = Duration::from_millis(10);

/// The feature ranges a Kafka 4.4.0 broker advertises (asked of its jar:
/// `Feature.PRODUCTION_FEATURES` and `MetadataVersion`): `metadata.version`
/// 7 (3.3-IV3) to 33 (4.4-IV2), `kraft.version` 0-1, `transaction.version`
/// 0-2, `group.version` 0-1, `eligible.leader.replicas.version` 0-1,
/// `share.version` 0-2, `streams.version` 0-1.
pub const FEATURES: [(&str, i16, i16); 7] = [
    ("metadata.version", 7, 33),
    ("kraft.version", 0, 1),
    ("transaction.version", 0, 2),
    ("group.version", 0, 1),
    ("eligible.leader.replicas.version", 0, 1),
    ("share.version", 0, 2),
    ("streams.version", 0, 1),
];

/// The registration of simulated broker `broker_id` in `cluster_id`: a fresh
/// incarnation id and log directory id derived from the id (stable across a
/// run, distinct between brokers), one PLAINTEXT listener on
/// `127.0.0.1:(19000 + broker_id)` (nothing listens there: no client
/// connects), [`FEATURES`], no rack, no previous epoch (-1: a first start).
pub fn registration(cluster_id: &str, broker_id: i32) -> BrokerRegistrationRequest {
    let id = broker_id as u32 as u128;
    BrokerRegistrationRequest::default()
        .with_broker_id(broker_id.into())
        .with_cluster_id(StrBytes::from_string(cluster_id.to_owned()))
        .with_incarnation_id(uuid::Uuid::from_u128(
            0xb0b0_0000_0000_0000_0000_0000_0000_0000 | id,
        ))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(listener_port(broker_id))
                .with_security_protocol(0),
        ])
        .with_features(
            FEATURES
                .iter()
                .map(|(name, min, max)| {
                    Feature::default()
                        .with_name(StrBytes::from_static_str(name))
                        .with_min_supported_version(*min)
                        .with_max_supported_version(*max)
                })
                .collect(),
        )
        .with_log_dirs(vec![log_dir(broker_id)])
        .with_previous_broker_epoch(-1)
}

/// The advertised port of broker `broker_id`: 19000 + id, wrapped into the
/// unprivileged range.
fn listener_port(broker_id: i32) -> u16 {
    (19000 + broker_id.rem_euclid(40000)) as u16
}

/// The one log directory id of broker `broker_id` (never one of Kafka's
/// reserved ids 0 and 1, `DirectoryId.UNASSIGNED`/`LOST`).
pub fn log_dir(broker_id: i32) -> uuid::Uuid {
    uuid::Uuid::from_u128(0xd1d1_0000_0000_0000_0000_0000_0000_0000 | broker_id as u32 as u128)
}

/// Where a simulated broker is in Kafka's `BrokerState` terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Registered, not yet caught up with the metadata log: heartbeats
    /// want to stay fenced and go out every [`CATCH_UP_PAUSE`].
    Starting,
    /// Caught up and (simulated) done loading: heartbeats ask to be
    /// unfenced.
    Recovery,
    /// Unfenced by the controller.
    Running,
}

/// One registered broker's heartbeat state: its broker epoch (the offset
/// of its RegisterBrokerRecord, from the registration response) and phase.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    /// The broker's id.
    pub broker_id: i32,
    /// The broker epoch the controller gave it.
    pub broker_epoch: i64,
    /// Its phase.
    pub phase: Phase,
}

impl Lifecycle {
    /// A broker just registered with `broker_epoch`.
    pub fn registered(broker_id: i32, broker_epoch: i64) -> Self {
        Self {
            broker_id,
            broker_epoch,
            phase: Phase::Starting,
        }
    }

    /// The next heartbeat. `metadata_offset` is the highest committed offset
    /// of the metadata log the tool has seen (a broker's replica would have
    /// fetched about that far); the broker's own registration is committed
    /// once it is answered, so the offset sent is at least its broker epoch.
    /// `WantFence` is true until the broker is caught up (Kafka's
    /// `readyToUnfence`), `WantShutDown` always false.
    pub fn heartbeat(&self, metadata_offset: i64) -> BrokerHeartbeatRequest {
        BrokerHeartbeatRequest::default()
            .with_broker_id(self.broker_id.into())
            .with_broker_epoch(self.broker_epoch)
            .with_current_metadata_offset(metadata_offset.max(self.broker_epoch))
            .with_want_fence(self.phase == Phase::Starting)
            .with_want_shut_down(false)
    }

    /// Takes an answer without error code and says how long to wait before
    /// the next heartbeat: [`CATCH_UP_PAUSE`] while catching up and on the
    /// step that makes the broker ready to unfence, `interval`
    /// (`broker.heartbeat.interval.ms`) otherwise. Returns whether this
    /// answer unfenced the broker (its first `IsFenced` false).
    pub fn answered(
        &mut self,
        response: &BrokerHeartbeatResponse,
        interval: Duration,
    ) -> (Duration, bool) {
        match self.phase {
            Phase::Starting if response.is_caught_up => {
                self.phase = Phase::Recovery;
                (CATCH_UP_PAUSE, false)
            }
            Phase::Starting => (CATCH_UP_PAUSE, false),
            Phase::Recovery if !response.is_fenced => {
                self.phase = Phase::Running;
                (interval, true)
            }
            Phase::Recovery | Phase::Running => (interval, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: Duration = Duration::from_millis(2000);

    fn answer(caught_up: bool, fenced: bool) -> BrokerHeartbeatResponse {
        BrokerHeartbeatResponse::default()
            .with_is_caught_up(caught_up)
            .with_is_fenced(fenced)
    }

    #[test]
    fn a_broker_wants_to_stay_fenced_until_caught_up_and_then_asks_to_be_unfenced() {
        let mut broker = Lifecycle::registered(7, 42);
        assert!(broker.heartbeat(0).want_fence);
        assert_eq!(
            broker.answered(&answer(false, true), INTERVAL),
            (CATCH_UP_PAUSE, false)
        );
        assert!(broker.heartbeat(0).want_fence);
        assert_eq!(
            broker.answered(&answer(true, true), INTERVAL),
            (CATCH_UP_PAUSE, false)
        );
        let next = broker.heartbeat(50);
        assert!(!next.want_fence);
        assert!(!next.want_shut_down);
        assert_eq!(
            broker.answered(&answer(true, false), INTERVAL),
            (INTERVAL, true)
        );
        assert_eq!(broker.phase, Phase::Running);
        assert_eq!(
            broker.answered(&answer(true, false), INTERVAL),
            (INTERVAL, false)
        );
    }

    #[test]
    fn the_metadata_offset_sent_is_never_below_the_brokers_own_registration() {
        let broker = Lifecycle::registered(7, 42);
        let early = broker.heartbeat(10);
        assert_eq!(
            (early.broker_epoch, early.current_metadata_offset),
            (42, 42)
        );
        assert_eq!(broker.heartbeat(99).current_metadata_offset, 99);
    }

    #[test]
    fn a_registration_carries_what_a_kafka_4_4_broker_advertises() {
        let r = registration("MkU3OEVBNTcwNTJENDM2Qk", 105);
        let mv = r
            .features
            .iter()
            .find(|f| f.name.as_str() == "metadata.version")
            .map(|f| (f.min_supported_version, f.max_supported_version));
        assert_eq!(mv, Some((7, 33)));
        assert!(
            r.features
                .iter()
                .any(|f| f.name.as_str() == "kraft.version")
        );
        assert_eq!(r.log_dirs, vec![log_dir(105)]);
        assert_ne!(r.incarnation_id, registration("x", 106).incarnation_id);
        assert_eq!(r.previous_broker_epoch, -1);
        assert_eq!(r.listeners[0].port, 19105);
    }
}
