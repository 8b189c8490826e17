//! Broker sessions in the active controller's memory (Kafka's
//! `BrokerHeartbeatManager`): when each broker last heartbeat, the metadata
//! offset it reported, its controlled shutdown offset, and the next control
//! state a heartbeat asks for (`calculateNextBrokerState`).
//!
//! Sessions are not in the log: a new active controller starts every
//! registered broker's session afresh at activation (Kafka's
//! `ClusterControlManager.activate`), so a failover never fences a broker
//! that keeps heartbeating. Times are engine milliseconds. Owns the session
//! rules; it must not write records (`cluster_control` does).

use std::collections::BTreeMap;

/// A broker's control state (Kafka's `BrokerControlState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerControlState {
    /// Fenced: may not lead partitions nor be in an ISR.
    Fenced,
    /// Unfenced and running.
    Unfenced,
    /// Unfenced, moving its leaderships away before it stops.
    ControlledShutdown,
    /// Told to stop now (and fenced).
    ShutdownNow,
}

impl BrokerControlState {
    /// Whether a broker in this state is fenced.
    pub fn fenced(self) -> bool {
        matches!(self, Self::Fenced | Self::ShutdownNow)
    }
    /// Whether a broker in this state is in controlled shutdown.
    pub fn in_controlled_shutdown(self) -> bool {
        self == Self::ControlledShutdown
    }
    /// Whether the heartbeat answer tells the broker to shut down.
    pub fn should_shut_down(self) -> bool {
        self == Self::ShutdownNow
    }
}

/// What a heartbeat asks for (the fields of BrokerHeartbeatRequest that the
/// next state depends on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatAsk {
    /// `wantFence`.
    pub want_fence: bool,
    /// `wantShutDown`.
    pub want_shut_down: bool,
    /// `currentMetadataOffset`.
    pub current_metadata_offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Session {
    last_contact_ms: u64,
    metadata_offset: i64,
    /// -1 until the broker enters controlled shutdown.
    controlled_shutdown_offset: i64,
    fenced: bool,
}

/// The sessions of the registered brokers (see the module doc).
#[derive(Debug, Clone)]
pub struct BrokerHeartbeatManager {
    session_timeout_ms: u64,
    sessions: BTreeMap<i32, Session>,
}

impl BrokerHeartbeatManager {
    /// An empty manager with `broker.session.timeout.ms` `session_timeout_ms`.
    pub fn new(session_timeout_ms: u64) -> Self {
        Self {
            session_timeout_ms,
            sessions: BTreeMap::new(),
        }
    }

    /// `broker.session.timeout.ms`.
    pub fn session_timeout_ms(&self) -> u64 {
        self.session_timeout_ms
    }

    /// A contact from broker `id` at `now_ms` (Kafka's `touch`): starts or
    /// renews its session, with its fencing and metadata offset.
    pub fn touch(&mut self, id: i32, fenced: bool, metadata_offset: i64, now_ms: u64) {
        let s = self.sessions.entry(id).or_insert(Session {
            last_contact_ms: now_ms,
            metadata_offset,
            controlled_shutdown_offset: -1,
            fenced,
        });
        s.last_contact_ms = now_ms;
        s.metadata_offset = metadata_offset;
        s.fenced = fenced;
        if fenced {
            s.controlled_shutdown_offset = -1;
        }
    }

    /// A registration of broker `id` (Kafka's `register`): a new session
    /// when it has none, a renewed one when its fencing changed.
    pub fn register(&mut self, id: i32, fenced: bool, now_ms: u64) {
        match self.sessions.get(&id) {
            None => self.touch(id, fenced, -1, now_ms),
            Some(s) if s.fenced != fenced => {
                let offset = s.metadata_offset;
                self.touch(id, fenced, offset, now_ms);
            }
            Some(_) => {}
        }
    }

    /// Marks broker `id` fenced without renewing its session.
    pub fn fence(&mut self, id: i32) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.fenced = true;
            s.controlled_shutdown_offset = -1;
        }
    }

    /// Forgets broker `id` (unregistered, or a new incarnation).
    pub fn remove(&mut self, id: i32) {
        self.sessions.remove(&id);
    }

    /// Whether broker `id` is unfenced and heard from within the session
    /// timeout (Kafka's `hasValidSession`): another incarnation may not
    /// register then.
    pub fn has_valid_session(&self, id: i32, now_ms: u64) -> bool {
        self.sessions.get(&id).is_some_and(|s| {
            !s.fenced && s.last_contact_ms.saturating_add(self.session_timeout_ms) >= now_ms
        })
    }

    /// The unfenced brokers whose session has expired at `now_ms`, oldest
    /// contact first.
    pub fn stale_brokers(&self, now_ms: u64) -> Vec<i32> {
        let mut stale: Vec<(u64, i32)> = self
            .sessions
            .iter()
            .filter(|(_, s)| {
                !s.fenced && s.last_contact_ms.saturating_add(self.session_timeout_ms) < now_ms
            })
            .map(|(id, s)| (s.last_contact_ms, *id))
            .collect();
        stale.sort_unstable();
        stale.into_iter().map(|(_, id)| id).collect()
    }

    /// When the next unfenced session expires (ms): the first instant at
    /// which [`Self::stale_brokers`] is not empty.
    pub fn next_expiry_ms(&self) -> Option<u64> {
        self.sessions
            .values()
            .filter(|s| !s.fenced)
            .map(|s| {
                s.last_contact_ms
                    .saturating_add(self.session_timeout_ms)
                    .saturating_add(1)
            })
            .min()
    }

    /// Records `offset` as the controlled shutdown offset of broker `id` if
    /// it is unfenced and has none yet (Kafka's
    /// `maybeUpdateControlledShutdownOffset`).
    pub fn maybe_update_controlled_shutdown_offset(&mut self, id: i32, offset: i64) {
        if let Some(s) = self.sessions.get_mut(&id)
            && !s.fenced
            && s.controlled_shutdown_offset < 0
        {
            s.controlled_shutdown_offset = offset;
        }
    }

    /// Overwrites the controlled shutdown offset of an unfenced broker in
    /// controlled shutdown (one set by
    /// [`Self::maybe_update_controlled_shutdown_offset`] in the same decision).
    pub fn set_controlled_shutdown_offset(&mut self, id: i32, offset: i64) {
        if let Some(s) = self.sessions.get_mut(&id)
            && !s.fenced
            && s.controlled_shutdown_offset >= 0
        {
            s.controlled_shutdown_offset = offset;
        }
    }

    /// The lowest metadata offset reported by an unfenced broker not in
    /// controlled shutdown; `i64::MAX` when there is none (Kafka's
    /// `lowestActiveOffset`).
    pub fn lowest_active_offset(&self) -> i64 {
        self.sessions
            .values()
            .filter(|s| !s.fenced && s.controlled_shutdown_offset < 0)
            .map(|s| s.metadata_offset)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// The state a heartbeat `ask` of broker `id`, now in `current`, moves
    /// it to (Kafka's `calculateNextBrokerState`, same cases and order).
    /// `register_record_offset` is the offset of its RegisterBrokerRecord:
    /// a broker is unfenced only once its metadata reached it;
    /// `has_leaderships` whether it still leads partitions (a controlled
    /// shutdown waits for them to move).
    pub fn next_state(
        &self,
        id: i32,
        current: BrokerControlState,
        ask: HeartbeatAsk,
        register_record_offset: i64,
        has_leaderships: bool,
    ) -> BrokerControlState {
        use BrokerControlState::*;
        match current {
            Fenced => {
                if ask.want_shut_down {
                    tracing::info!(
                        broker = id,
                        "fenced broker has requested and been granted an immediate shutdown"
                    );
                    ShutdownNow
                } else if !ask.want_fence {
                    if ask.current_metadata_offset >= register_record_offset {
                        tracing::info!(
                            broker = id,
                            register_record_offset,
                            "the request of the broker to unfence has been granted because it has caught up with the offset of its register broker record"
                        );
                        Unfenced
                    } else {
                        tracing::debug!(
                            broker = id,
                            register_record_offset,
                            offset = ask.current_metadata_offset,
                            "the request of the broker to unfence cannot yet be granted: it has not caught up with its register broker record"
                        );
                        Fenced
                    }
                } else {
                    Fenced
                }
            }
            Unfenced => {
                if ask.want_fence {
                    if ask.want_shut_down {
                        tracing::info!(
                            broker = id,
                            "unfenced broker has requested and been granted an immediate shutdown"
                        );
                        ShutdownNow
                    } else {
                        tracing::info!(
                            broker = id,
                            "unfenced broker has requested and been granted fencing"
                        );
                        Fenced
                    }
                } else if ask.want_shut_down {
                    if has_leaderships {
                        tracing::info!(
                            broker = id,
                            "unfenced broker has requested and been granted a controlled shutdown"
                        );
                        ControlledShutdown
                    } else {
                        tracing::info!(
                            broker = id,
                            "unfenced broker has requested and been granted an immediate shutdown"
                        );
                        ShutdownNow
                    }
                } else {
                    Unfenced
                }
            }
            ControlledShutdown => {
                if has_leaderships {
                    return ControlledShutdown;
                }
                let lowest = self.lowest_active_offset();
                let offset = self
                    .sessions
                    .get(&id)
                    .map_or(-1, |s| s.controlled_shutdown_offset);
                if offset <= lowest {
                    tracing::info!(
                        broker = id,
                        lowest_active_offset = lowest,
                        controlled_shutdown_offset = offset,
                        "the request of the broker to shut down has been granted"
                    );
                    ShutdownNow
                } else {
                    ControlledShutdown
                }
            }
            ShutdownNow => ShutdownNow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BrokerControlState::*, *};

    fn ask(want_fence: bool, want_shut_down: bool, offset: i64) -> HeartbeatAsk {
        HeartbeatAsk {
            want_fence,
            want_shut_down,
            current_metadata_offset: offset,
        }
    }

    #[test]
    fn a_session_expires_after_the_timeout_and_only_when_unfenced() {
        let mut m = BrokerHeartbeatManager::new(9_000);
        m.register(1, true, 1_000);
        assert!(
            !m.has_valid_session(1, 1_000),
            "fenced brokers hold no session"
        );
        m.touch(1, false, 5, 2_000);
        assert!(m.has_valid_session(1, 11_000));
        assert!(m.stale_brokers(11_000).is_empty());
        assert_eq!(m.next_expiry_ms(), Some(11_001));
        assert_eq!(m.stale_brokers(11_001), vec![1]);
        assert!(!m.has_valid_session(1, 11_001));
        m.fence(1);
        assert!(m.stale_brokers(20_000).is_empty());
        assert_eq!(m.next_expiry_ms(), None);
    }

    #[test]
    fn next_states_follow_kafkas_table() {
        let m = BrokerHeartbeatManager::new(9_000);
        // Fenced: unfenced only once caught up with the registration.
        assert_eq!(
            m.next_state(1, Fenced, ask(false, false, 9), 10, false),
            Fenced
        );
        assert_eq!(
            m.next_state(1, Fenced, ask(false, false, 10), 10, false),
            Unfenced
        );
        assert_eq!(
            m.next_state(1, Fenced, ask(true, false, 99), 10, false),
            Fenced
        );
        assert_eq!(
            m.next_state(1, Fenced, ask(true, true, 0), 10, false),
            ShutdownNow
        );
        // Unfenced.
        assert_eq!(
            m.next_state(1, Unfenced, ask(false, false, 0), 10, false),
            Unfenced
        );
        assert_eq!(
            m.next_state(1, Unfenced, ask(true, false, 0), 10, false),
            Fenced
        );
        assert_eq!(
            m.next_state(1, Unfenced, ask(true, true, 0), 10, false),
            ShutdownNow
        );
        assert_eq!(
            m.next_state(1, Unfenced, ask(false, true, 0), 10, false),
            ShutdownNow
        );
        assert_eq!(
            m.next_state(1, Unfenced, ask(false, true, 0), 10, true),
            ControlledShutdown
        );
        assert_eq!(
            m.next_state(1, ShutdownNow, ask(false, false, 0), 10, false),
            ShutdownNow
        );
    }

    #[test]
    fn a_controlled_shutdown_ends_once_the_active_brokers_passed_its_offset() {
        let mut m = BrokerHeartbeatManager::new(9_000);
        m.touch(1, false, 100, 0);
        m.touch(2, false, 40, 0);
        m.maybe_update_controlled_shutdown_offset(1, 50);
        m.maybe_update_controlled_shutdown_offset(1, 70);
        let a = ask(false, true, 100);
        assert_eq!(
            m.next_state(1, ControlledShutdown, a, 0, true),
            ControlledShutdown
        );
        assert_eq!(
            m.next_state(1, ControlledShutdown, a, 0, false),
            ControlledShutdown
        );
        m.touch(2, false, 50, 1);
        assert_eq!(m.lowest_active_offset(), 50);
        assert_eq!(
            m.next_state(1, ControlledShutdown, a, 0, false),
            ShutdownNow
        );
    }
}
