//! [`QuorumClient`] over `kraft_controller::admin::AdminClient` (the Kafka
//! admin client shared with `kraft-controller quorum`). One connection per
//! call: the reconciler makes a handful of calls per pass, and a fresh
//! connection never carries state from a controller that restarted.
//!
//! Owns only the mapping of types and errors; it must not retry (the
//! reconciler requeues) nor decide anything.

use std::{collections::BTreeMap, time::Duration};

use kraft_controller::admin::{AdminClient, AdminError, Endpoint, QuorumInfo, ReplicaInfo};
use uuid::Uuid;

use super::{QuorumClient, QuorumDescription, QuorumError, ReplicaState};
use crate::crd::CONTROLLER_LISTENER_NAME;

/// Kafka's `NOT_LEADER_OR_FOLLOWER`.
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

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

    async fn connect(&self, addr: &str) -> Result<AdminClient, QuorumError> {
        AdminClient::connect(addr, self.timeout)
            .await
            .map_err(|e| map_error(addr, e))
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
        AdminError::Io { .. } | AdminError::Timeout { .. } => QuorumError::Unreachable {
            addr,
            message: e.to_string(),
        },
        AdminError::Protocol(message) => QuorumError::Rejected {
            addr,
            code: -1,
            name: "PROTOCOL_ERROR".into(),
            message,
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
            Some((n.node_id, format!("{}:{}", e.host, e.port)))
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

/// `host:port` → the `CONTROLLER` listener endpoint AddRaftVoter carries.
fn endpoint(addr: &str, s: &str) -> Result<Endpoint, QuorumError> {
    let bad = || QuorumError::Rejected {
        addr: addr.to_string(),
        code: -1,
        name: "INVALID_ENDPOINT".into(),
        message: format!("endpoint {s:?} is not host:port"),
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse::<u16>().map_err(|_| bad())?;
    Ok(Endpoint {
        name: CONTROLLER_LISTENER_NAME.to_string(),
        host: host.to_string(),
        port,
    })
}

impl QuorumClient for AdminQuorumClient {
    async fn describe_quorum(&self, addr: &str) -> Result<QuorumDescription, QuorumError> {
        let mut c = self.connect(addr).await?;
        let q = c.describe_quorum().await.map_err(|e| map_error(addr, e))?;
        Ok(description(&q))
    }

    async fn add_voter(
        &self,
        addr: &str,
        node_id: i32,
        directory_id: Uuid,
        endpoint_str: &str,
    ) -> Result<(), QuorumError> {
        let ep = endpoint(addr, endpoint_str)?;
        let mut c = self.connect(addr).await?;
        c.add_raft_voter(node_id, directory_id, &[ep], self.change_timeout_ms)
            .await
            .map_err(|e| map_error(addr, e))
    }

    async fn remove_voter(
        &self,
        addr: &str,
        node_id: i32,
        directory_id: Uuid,
    ) -> Result<(), QuorumError> {
        let mut c = self.connect(addr).await?;
        c.remove_raft_voter(node_id, directory_id)
            .await
            .map_err(|e| map_error(addr, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn an_endpoint_is_the_controller_listener_at_host_and_port() {
        let e = endpoint("a:1", "kq-3.kq.ns.svc.cluster.local:9093").expect("valid");
        assert_eq!(
            (e.name.as_str(), e.host.as_str(), e.port),
            ("CONTROLLER", "kq-3.kq.ns.svc.cluster.local", 9093)
        );
        assert!(endpoint("a:1", "no-port").is_err());
    }
}
