//! [`QuorumClient`] over `kraft_controller::admin::AdminClient` (the Kafka
//! admin client shared with `kraft-controller quorum`). One connection per
//! reconcile pass: an [`AdminQuorumSession`] connects to the first of its
//! bootstrap controllers (the pods' `ip:port`) that answers, lets the admin
//! client follow the active controller from there, and keeps that connection
//! for the pass's DescribeQuorum and voter change; it moves on to the next
//! bootstrap controller only when the one it talks to is unreachable or
//! knows no leader. A new pass opens a new session, so no connection
//! outlives a pass and none carries state from a controller that restarted.
//!
//! Owns only the mapping of types and errors; it must not retry a voter
//! change (the reconciler requeues) nor decide anything.

use std::{collections::BTreeMap, collections::VecDeque, net::SocketAddr, time::Duration};

use kraft_common::{
    Endpoint,
    errors::{CONTROLLER_ID_NOT_REGISTERED, NOT_LEADER_OR_FOLLOWER, UNSUPPORTED_VERSION},
};
use kraft_controller::{
    admin::{AdminClient, AdminError, QuorumInfo, ReplicaInfo, UPGRADE_TYPE_UPGRADE},
    raft::membership::KRAFT_VERSION_FEATURE,
};
use uuid::Uuid;

use super::{
    AdminTls, QuorumClient, QuorumDescription, QuorumError, QuorumSession, ReplicaState,
    Unregistration,
};
use crate::crd::CONTROLLER_LISTENER_NAME;

/// The production [`QuorumClient`].
#[derive(Clone, Debug)]
pub struct AdminQuorumClient {
    /// Bounds connecting and each request.
    pub timeout: Duration,
    /// How long the leader may take to commit a voter change (AddRaftVoter
    /// `timeout_ms`), ms.
    pub change_timeout_ms: i32,
}

impl AdminQuorumClient {
    /// A client with the given request timeout and Kafka's default request
    /// timeout (30 s) for voter changes.
    pub fn new(timeout: Duration) -> Self {
        AdminQuorumClient {
            timeout,
            change_timeout_ms: 30_000,
        }
    }
}

impl QuorumClient for AdminQuorumClient {
    type Session = AdminQuorumSession;

    fn session(&self, bootstrap: Vec<SocketAddr>, tls: Option<AdminTls>) -> AdminQuorumSession {
        AdminQuorumSession {
            remaining: bootstrap.into(),
            client: None,
            tls,
            timeout: self.timeout,
            change_timeout_ms: self.change_timeout_ms,
        }
    }
}

/// One reconcile pass's connection to a quorum; see the module doc.
#[derive(Debug)]
pub struct AdminQuorumSession {
    /// Bootstrap controllers not tried yet, in order.
    remaining: VecDeque<SocketAddr>,
    /// The connection, once open (it follows the active controller).
    client: Option<AdminClient>,
    /// mTLS of the connections (`None`: PLAINTEXT).
    tls: Option<AdminTls>,
    timeout: Duration,
    change_timeout_ms: i32,
}

impl AdminQuorumSession {
    /// The open connection, or one to the next bootstrap controller that
    /// accepts. Errors: [`QuorumError::Unreachable`] of the last one tried.
    async fn connected(&mut self) -> Result<&mut AdminClient, QuorumError> {
        let mut last = QuorumError::Unreachable {
            addr: "-".into(),
            message: "no bootstrap controller left to try".into(),
        };
        while self.client.is_none() {
            let Some(addr) = self.remaining.pop_front() else {
                return Err(last);
            };
            let addr = addr.to_string();
            match AdminClient::connect_with_tls(&addr, self.timeout, self.tls.clone()).await {
                Ok(c) => self.client = Some(c),
                Err(e) => last = map_error(&addr, e),
            }
        }
        self.client.as_mut().ok_or(last)
    }

    /// Maps `e` from the controller at `addr`, dropping the connection when
    /// the next call should start at another controller.
    fn failed(&mut self, addr: &str, e: AdminError) -> QuorumError {
        let e = map_error(addr, e);
        if matches!(
            e,
            QuorumError::Unreachable { .. } | QuorumError::NotLeader { .. }
        ) {
            self.client = None;
        }
        e
    }
}

impl QuorumSession for AdminQuorumSession {
    async fn describe_quorum(&mut self) -> Result<QuorumDescription, QuorumError> {
        let mut last = None;
        loop {
            let c = match self.connected().await {
                Ok(c) => c,
                Err(e) => return Err(last.unwrap_or(e)),
            };
            let addr = c.connected_addr().to_owned();
            match c.describe_quorum().await {
                Ok(q) => return Ok(description(&q)),
                Err(e) => match self.failed(&addr, e) {
                    e @ (QuorumError::NotLeader { .. } | QuorumError::Unreachable { .. }) => {
                        tracing::debug!(error = %e, "describe quorum failed; next bootstrap controller");
                        last = Some(e);
                    }
                    e => return Err(e),
                },
            }
        }
    }

    async fn add_voter(
        &mut self,
        node_id: i32,
        directory_id: Uuid,
        endpoint: &Endpoint,
    ) -> Result<(), QuorumError> {
        let change_timeout_ms = self.change_timeout_ms;
        let c = self.connected().await?;
        let addr = c.connected_addr().to_owned();
        let result = c
            .add_raft_voter(
                node_id,
                directory_id,
                std::slice::from_ref(endpoint),
                change_timeout_ms,
            )
            .await;
        result.map_err(|e| self.failed(&addr, e))
    }

    async fn remove_voter(&mut self, node_id: i32, directory_id: Uuid) -> Result<(), QuorumError> {
        let c = self.connected().await?;
        let addr = c.connected_addr().to_owned();
        let result = c.remove_raft_voter(node_id, directory_id).await;
        result.map_err(|e| self.failed(&addr, e))
    }

    async fn upgrade_kraft_version(&mut self) -> Result<(), QuorumError> {
        let change_timeout_ms = self.change_timeout_ms;
        let c = self.connected().await?;
        let addr = c.connected_addr().to_owned();
        let updates = [(KRAFT_VERSION_FEATURE.to_string(), 1)];
        let result = c
            .update_features(&updates, UPGRADE_TYPE_UPGRADE, false, change_timeout_ms)
            .await;
        result.map_err(|e| self.failed(&addr, e))
    }

    async fn unregister_controller(&mut self, node_id: i32) -> Result<Unregistration, QuorumError> {
        let c = self.connected().await?;
        let addr = c.connected_addr().to_owned();
        let served = c.unregister_controller_version().is_some();
        if let Some(reason) = unregistration_unsupported(c.finalized_metadata_version(), served) {
            return Ok(Unregistration::Unsupported { reason });
        }
        match c.unregister_controller(node_id).await {
            Ok(()) => Ok(Unregistration::Unregistered),
            Err(e) if e.code() == Some(CONTROLLER_ID_NOT_REGISTERED) => {
                Ok(Unregistration::Unregistered)
            }
            Err(e) if e.code() == Some(UNSUPPORTED_VERSION) => Ok(Unregistration::Unsupported {
                reason: e.to_string(),
            }),
            Err(e) => Err(self.failed(&addr, e)),
        }
    }

    async fn ensure_broker_acls(&mut self, principal: &str) -> Result<usize, QuorumError> {
        let c = self.connected().await?;
        let addr = c.connected_addr().to_owned();
        let mut created = 0;
        for acl in kraft_controller::admin::broker_acls(principal) {
            match c.ensure_acl(&acl).await {
                Ok(true) => created += 1,
                Ok(false) => {}
                Err(e) => return Err(self.failed(&addr, e)),
            }
        }
        Ok(created)
    }
}

/// Why a controller cannot unregister another (KIP-1312), `None` when it
/// can: `served` says whether it advertises UnregisterController (api 94,
/// Kafka 4.4) in ApiVersions, and its finalized `metadata.version` (from
/// the same answer) must be 4.4-IV2 (33) or later (Kafka's
/// `MetadataVersion.isControllerUnregistrationSupported`).
pub fn unregistration_unsupported(metadata_version: Option<i16>, served: bool) -> Option<String> {
    use kraft_controller::metadata::unregistration::CONTROLLER_UNREGISTRATION_MIN_LEVEL;
    if !served {
        return Some(
            "the controllers do not serve UnregisterController (api 94, Kafka 4.4, KIP-1312)"
                .into(),
        );
    }
    match metadata_version {
        Some(l) if l >= CONTROLLER_UNREGISTRATION_MIN_LEVEL => None,
        Some(l) => Some(format!(
            "finalized metadata.version level {l} is below 4.4-IV2 ({CONTROLLER_UNREGISTRATION_MIN_LEVEL}), which unregistration needs"
        )),
        None => Some("no finalized metadata.version".into()),
    }
}

/// Maps an admin error onto the reconciler's three cases.
pub fn map_error(addr: &str, e: AdminError) -> QuorumError {
    let addr = addr.to_string();
    match e {
        AdminError::Kafka { code, .. } if code == NOT_LEADER_OR_FOLLOWER => {
            QuorumError::NotLeader { addr }
        }
        AdminError::Kafka {
            code,
            name,
            ref message,
        } => {
            let message = message.clone().unwrap_or_default();
            if e.is_retriable() {
                QuorumError::Retriable {
                    addr,
                    code,
                    name: name.to_string(),
                    message,
                }
            } else {
                QuorumError::Rejected {
                    addr,
                    code,
                    name: name.to_string(),
                    message,
                }
            }
        }
        AdminError::Io { .. }
        | AdminError::Timeout { .. }
        | AdminError::NoBootstrapAnswered { .. } => QuorumError::Unreachable {
            addr,
            message: e.to_string(),
        },
        AdminError::Protocol(message) => QuorumError::Rejected {
            addr,
            code: -1,
            name: "PROTOCOL_ERROR".into(),
            message,
        },
        AdminError::InvalidBootstrap { .. } => QuorumError::Rejected {
            addr,
            code: -1,
            name: "INVALID_BOOTSTRAP".into(),
            message: e.to_string(),
        },
    }
}

fn replica(r: &ReplicaInfo) -> ReplicaState {
    ReplicaState {
        node_id: r.replica_id,
        directory_id: r.directory_id,
        log_end_offset: r.log_end_offset,
        last_fetch_timestamp_ms: r.last_fetch_timestamp_ms,
        last_caught_up_timestamp_ms: r.last_caught_up_timestamp_ms,
    }
}

/// The operator's view of a DescribeQuorum answer: voters' `CONTROLLER`
/// endpoints (or their first) as `host:port`.
pub fn description(q: &QuorumInfo) -> QuorumDescription {
    let endpoints: BTreeMap<i32, String> = q
        .nodes
        .iter()
        .filter_map(|n| {
            let e = n
                .endpoints
                .iter()
                .find(|e| e.name == CONTROLLER_LISTENER_NAME)
                .or_else(|| n.endpoints.first())?;
            Some((n.node_id, e.address()))
        })
        .collect();
    QuorumDescription {
        leader_id: q.leader_id,
        leader_epoch: q.leader_epoch,
        high_watermark: q.high_watermark,
        voters: q.voters.iter().map(replica).collect(),
        observers: q.observers.iter().map(replica).collect(),
        endpoints,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unregistration_needs_api_94_and_metadata_version_4_4_iv2() {
        let at = Some;
        assert_eq!(unregistration_unsupported(at(33), true), None);
        assert_eq!(unregistration_unsupported(at(34), true), None);
        let below = unregistration_unsupported(at(32), true).expect("refused");
        assert!(below.contains("level 32 is below 4.4-IV2 (33)"), "{below}");
        let old = unregistration_unsupported(at(33), false).expect("refused");
        assert!(old.contains("api 94"), "{old}");
        assert!(unregistration_unsupported(None, true).is_some());
    }

    #[test]
    fn request_timed_out_is_retriable_and_duplicate_voter_is_rejected() {
        let timed_out = AdminError::Kafka {
            code: 7,
            name: "REQUEST_TIMED_OUT",
            message: Some("not caught up".into()),
        };
        assert!(matches!(
            map_error("a:1", timed_out),
            QuorumError::Retriable { code: 7, .. }
        ));
        let duplicate = AdminError::Kafka {
            code: 116,
            name: "DUPLICATE_VOTER",
            message: None,
        };
        assert!(matches!(
            map_error("a:1", duplicate),
            QuorumError::Rejected { code: 116, .. }
        ));
        let io = AdminError::Io {
            addr: "a:1".into(),
            reason: "refused".into(),
        };
        assert!(matches!(
            map_error("a:1", io),
            QuorumError::Unreachable { .. }
        ));
    }
}
