//! The seam between the reconciler and the controllers' admin RPCs
//! (DescribeQuorum 55, AddRaftVoter 80, RemoveRaftVoter 81; KIP-853; the
//! kraft.version upgrade of an adopted static quorum: UpdateFeatures 57;
//! UnregisterController 94, KIP-1312; and the brokers' CLUSTER_ACTION ACL:
//! DescribeAcls 29, CreateAcls 30).
//!
//! Owns the operator-side view of a quorum ([`QuorumDescription`]), the
//! [`QuorumClient`] and [`QuorumSession`] traits the reconciler calls, and the
//! pure derivation of "caught up" from what DescribeQuorum reports. It must
//! not decide membership (the planner does) nor know Kubernetes. The
//! production implementation adapts `kraft_controller::admin::AdminClient`;
//! tests use a fake that plays a quorum's answers.
//!
//! One reconcile pass opens one [`QuorumSession`] with the pods' addresses
//! as its bootstrap controllers (Kafka's `bootstrap.controllers`): it keeps
//! one connection for the pass (DescribeQuorum, then the one voter change),
//! moving to the next bootstrap controller only when the one it talks to is
//! unreachable or knows no leader.

pub mod admin;
#[cfg(test)]
pub mod fake;

use std::{collections::BTreeMap, future::Future, net::SocketAddr};

use kraft_common::Endpoint;
use uuid::Uuid;

/// How long after its last fetch a replica still counts as fetching (ms):
/// twice Kafka's default `controller.quorum.fetch.timeout.ms` (2000).
///
/// Wider than the leader's own window on purpose (issue 27): the leader is
/// the judge of caught up (it refuses an AddRaftVoter whose key did not
/// reach its log end within the fetch timeout, `voter_change.rs`, as
/// Kafka's `LeaderState.isReplicaCaughtUp`), and this window only decides
/// when the operator asks. A replica's caught-up time can date from its
/// previous fetch, up to one long poll before its last (Kafka's
/// `ReplicaState.updateFetchState`), and the answer ages before the
/// AddRaftVoter arrives; a window of one fetch timeout would call a replica
/// that fetched on time stale.
pub const FETCH_WINDOW_MS: i64 = 4_000;

/// One replica (voter or observer) as DescribeQuorum reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    /// `node.id`.
    pub node_id: i32,
    /// Directory id (KIP-853).
    pub directory_id: Uuid,
    /// Log end offset (next offset to write), or -1 when unknown.
    pub log_end_offset: i64,
    /// Leader's wall-clock ms of this replica's last fetch, if known.
    pub last_fetch_timestamp_ms: Option<i64>,
    /// Leader's wall-clock ms when this replica last reached the leader's
    /// log end offset, if known.
    pub last_caught_up_timestamp_ms: Option<i64>,
}

/// A DescribeQuorum answer from the leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumDescription {
    /// Leader's node id.
    pub leader_id: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// High watermark (offset).
    pub high_watermark: i64,
    /// The voter set (as the leader has it, KIP-853).
    pub voters: Vec<ReplicaState>,
    /// Observers.
    pub observers: Vec<ReplicaState>,
    /// Voters' endpoints `host:port` by node id (DescribeQuorum v2 `Nodes`).
    pub endpoints: BTreeMap<i32, String>,
}

impl QuorumDescription {
    /// The leader's clock as of this answer: Kafka reports the leader's own
    /// timestamps as its current time, so the largest timestamp is "now" on
    /// the leader, and staleness is judged without comparing clocks.
    pub fn reference_ms(&self) -> Option<i64> {
        self.voters
            .iter()
            .chain(&self.observers)
            .filter_map(|r| r.last_fetch_timestamp_ms.max(r.last_caught_up_timestamp_ms))
            .max()
    }

    /// Whether `r` fetched within [`FETCH_WINDOW_MS`] of the leader's now.
    /// Without timestamps (old versions), a replica is taken to be fetching.
    pub fn is_fetching(&self, r: &ReplicaState) -> bool {
        if r.node_id == self.leader_id && self.voters.iter().any(|v| v == r) {
            return true;
        }
        match (self.reference_ms(), r.last_fetch_timestamp_ms) {
            (Some(now), Some(t)) => now - t <= FETCH_WINDOW_MS,
            _ => true,
        }
    }

    /// Whether `r` is caught up: it reached the leader's log end offset within
    /// [`FETCH_WINDOW_MS`] (Kafka's leader uses `lastCaughtUpTimestamp` the
    /// same way to accept AddRaftVoter), or, without timestamps, its log end
    /// offset is at least the high watermark.
    pub fn is_caught_up(&self, r: &ReplicaState) -> bool {
        if r.node_id == self.leader_id && self.voters.iter().any(|v| v == r) {
            return true;
        }
        match (self.reference_ms(), r.last_caught_up_timestamp_ms) {
            (Some(now), Some(t)) if t >= 0 => now - t <= FETCH_WINDOW_MS,
            _ => r.log_end_offset >= self.high_watermark && r.log_end_offset >= 0,
        }
    }

    /// High watermark minus the replica's log end offset, at least 0.
    pub fn lag(&self, r: &ReplicaState) -> i64 {
        (self.high_watermark - r.log_end_offset).max(0)
    }
}

/// Errors of a call to a controller.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum QuorumError {
    /// No connection or no answer (timeout, refused, reset).
    #[error("controller at {addr} is unreachable: {message}")]
    Unreachable { addr: String, message: String },
    /// The controller is not the leader (NOT_LEADER_OR_FOLLOWER): ask another.
    #[error("controller at {addr} is not the leader")]
    NotLeader { addr: String },
    /// A Kafka error that means "try again later" (REQUEST_TIMED_OUT: not
    /// caught up or another change pending; leader changing).
    #[error("controller at {addr} answered {name} ({code}), retriable: {message}")]
    Retriable {
        addr: String,
        code: i16,
        name: String,
        message: String,
    },
    /// A Kafka error that retrying will not fix (DUPLICATE_VOTER,
    /// VOTER_NOT_FOUND, INCONSISTENT_CLUSTER_ID, UNSUPPORTED_VERSION, …).
    #[error("controller at {addr} refused: {name} ({code}): {message}")]
    Rejected {
        addr: String,
        code: i16,
        name: String,
        message: String,
    },
}

/// What an UnregisterController call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unregistration {
    /// The registration is gone (removed now, or already absent).
    Unregistered,
    /// The quorum cannot unregister yet; nothing was sent or changed. The
    /// reason says why (no api 94, or `metadata.version` below 4.4-IV2).
    Unsupported {
        /// Why, for status and the Event.
        reason: String,
    },
}

/// The TLS client of the operator's admin connections to one quorum.
pub type AdminTls = std::sync::Arc<kraft_controller::wire::tls::TlsClient>;

/// Opens admin sessions to a quorum's controllers.
pub trait QuorumClient: Send + Sync + 'static {
    /// The session type, one per reconcile pass.
    type Session: QuorumSession;

    /// A session bootstrapped from `bootstrap` (the pods' `ip:port`, in the
    /// order to try them: the last known leader first). No I/O until the
    /// first call; the session connects to the first controller that
    /// answers and keeps that connection, over mTLS with `tls` when set
    /// (`spec.tls.enabled`: the operator's admin client certificate).
    fn session(&self, bootstrap: Vec<SocketAddr>, tls: Option<AdminTls>) -> Self::Session;
}

/// The admin RPCs the reconciler needs, over one connection to the quorum.
/// Implementations time out on their own; none retries a voter change.
pub trait QuorumSession: Send {
    /// DescribeQuorum (55) of the `__cluster_metadata` partition, answered by
    /// the leader: a controller that is not the leader and cannot point to
    /// one gives [`QuorumError::NotLeader`], and the session tries the next
    /// bootstrap controller; the error of the last one when none answers.
    fn describe_quorum(
        &mut self,
    ) -> impl Future<Output = Result<QuorumDescription, QuorumError>> + Send;

    /// AddRaftVoter (80): add `(node_id, directory_id)` with its controller
    /// listener `endpoint` (listener `CONTROLLER`). Kafka answers once the new
    /// voter set is committed.
    fn add_voter(
        &mut self,
        node_id: i32,
        directory_id: Uuid,
        endpoint: &Endpoint,
    ) -> impl Future<Output = Result<(), QuorumError>> + Send;

    /// RemoveRaftVoter (81): remove `(node_id, directory_id)`. Kafka answers
    /// once the new voter set is committed.
    fn remove_voter(
        &mut self,
        node_id: i32,
        directory_id: Uuid,
    ) -> impl Future<Output = Result<(), QuorumError>> + Send;

    /// UpdateFeatures (57) `kraft.version=1` as an upgrade: a static quorum
    /// (kraft.version 0, `controller.quorum.voters`) becomes dynamic
    /// (KIP-853, KAFKA-16538; `kafka-features upgrade --feature
    /// kraft.version=1`). The controller answers once the KRaftVersion record
    /// is committed; at level 1 already it is a no-op, so a repeat is safe.
    fn upgrade_kraft_version(&mut self) -> impl Future<Output = Result<(), QuorumError>> + Send;

    /// UnregisterController (94, KIP-1312, Kafka 4.4): removes the KIP-919
    /// registration of `node_id`, a controller that is no longer a voter,
    /// when the active controller serves api 94 and the finalized
    /// `metadata.version` is 4.4-IV2 (level 33) or later
    /// ([`Unregistration::Unsupported`] otherwise, nothing sent). A
    /// controller already unregistered (CONTROLLER_ID_NOT_REGISTERED) counts
    /// as [`Unregistration::Unregistered`].
    fn unregister_controller(
        &mut self,
        node_id: i32,
    ) -> impl Future<Output = Result<Unregistration, QuorumError>> + Send;
    /// Makes sure every ACL a Kafka broker with `principal` needs is stored
    /// (`kraft_controller::admin::broker_acls`: CLUSTER_ACTION on the
    /// cluster, CREATE on the internal topics; each DescribeAcls 29, then
    /// CreateAcls 30 at the active controller when it is missing): how many
    /// this call created. Idempotent: Kafka stores an existing ACL only once.
    fn ensure_broker_acls(
        &mut self,
        principal: &str,
    ) -> impl Future<Output = Result<usize, QuorumError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(id: i32, leo: i64, fetch: Option<i64>, caught: Option<i64>) -> ReplicaState {
        ReplicaState {
            node_id: id,
            directory_id: Uuid::from_u128(id as u128 + 1),
            log_end_offset: leo,
            last_fetch_timestamp_ms: fetch,
            last_caught_up_timestamp_ms: caught,
        }
    }

    fn desc(voters: Vec<ReplicaState>, observers: Vec<ReplicaState>) -> QuorumDescription {
        QuorumDescription {
            leader_id: 0,
            leader_epoch: 3,
            high_watermark: 100,
            voters,
            observers,
            endpoints: BTreeMap::new(),
        }
    }

    #[test]
    fn a_replica_that_caught_up_within_the_window_is_caught_up() {
        let d = desc(
            vec![
                rep(0, 120, Some(10_000), Some(10_000)),
                rep(1, 110, Some(9_900), Some(9_000)),
                rep(2, 50, Some(9_900), Some(1_000)),
            ],
            vec![],
        );
        assert!(d.is_caught_up(&d.voters[0]));
        assert!(d.is_caught_up(&d.voters[1]));
        assert!(!d.is_caught_up(&d.voters[2]), "caught up 9 s ago is stale");
        assert!(d.is_fetching(&d.voters[2]));
        assert_eq!(d.lag(&d.voters[2]), 50);
    }

    #[test]
    fn a_replica_that_stopped_fetching_is_neither_fetching_nor_caught_up() {
        let d = desc(
            vec![
                rep(0, 120, Some(20_000), Some(20_000)),
                rep(1, 120, Some(1_000), Some(1_000)),
            ],
            vec![],
        );
        assert!(!d.is_fetching(&d.voters[1]));
        assert!(!d.is_caught_up(&d.voters[1]));
    }

    #[test]
    fn without_timestamps_caught_up_means_at_the_high_watermark() {
        let d = desc(
            vec![rep(0, 120, None, None)],
            vec![rep(1, 100, None, None), rep(2, 99, None, None)],
        );
        assert!(d.is_caught_up(&d.observers[0]));
        assert!(!d.is_caught_up(&d.observers[1]));
    }
}
