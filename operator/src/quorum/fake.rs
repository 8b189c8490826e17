//! A fake quorum for the reconciler's tests: plays a leader at one address
//! and followers (NOT_LEADER_OR_FOLLOWER) everywhere else, and records every
//! call. Test-only; no I/O.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use kraft_common::{Endpoint, kafka_uuid};
use uuid::Uuid;

use super::{QuorumClient, QuorumDescription, QuorumError, QuorumSession};

/// A fake quorum: the leader answers at `leader_addr`, every other address
/// is a follower (NOT_LEADER_OR_FOLLOWER). Records every call.
#[derive(Debug)]
pub struct FakeQuorum {
    /// The leader's `ip:port`.
    pub leader_addr: String,
    /// What the leader answers; `None`: no leader anywhere.
    pub description: Option<QuorumDescription>,
    /// The answer to every voter change.
    pub change_result: Result<(), QuorumError>,
    /// Every call, as `describe ADDR`, `add_voter ADDR ID DIR HOST:PORT`,
    /// `remove_voter ADDR ID DIR`, `upgrade_kraft_version ADDR`, `unregister ADDR
    /// ID` (only when the request is sent), `ensure_broker_acls ADDR PRINCIPAL`.
    pub calls: Mutex<Vec<String>>,
    /// The principals holding the brokers' CLUSTER_ACTION ACL.
    pub broker_acls: Mutex<Vec<String>>,
    /// The answer to every UnregisterController; `None` plays a quorum
    /// before Kafka 4.4 (`Unsupported`, nothing sent).
    pub unregistration: Option<Result<super::Unregistration, QuorumError>>,
}

impl QuorumClient for Arc<FakeQuorum> {
    type Session = FakeSession;
    fn session(&self, bootstrap: Vec<SocketAddr>, _tls: Option<super::AdminTls>) -> FakeSession {
        FakeSession {
            quorum: self.clone(),
            remaining: bootstrap.iter().map(ToString::to_string).collect(),
            connected: None,
        }
    }
}

/// One pass's session with the fake quorum: like the real one, it tries
/// its bootstrap controllers in order and stays with the one that answered.
#[derive(Debug)]
pub struct FakeSession {
    quorum: Arc<FakeQuorum>,
    remaining: VecDeque<String>,
    connected: Option<String>,
}

impl QuorumSession for FakeSession {
    async fn describe_quorum(&mut self) -> Result<QuorumDescription, QuorumError> {
        let mut last = QuorumError::NotLeader { addr: "-".into() };
        while let Some(addr) = self.connected.take().or_else(|| self.remaining.pop_front()) {
            self.quorum
                .calls
                .lock()
                .expect("lock")
                .push(format!("describe {addr}"));
            match &self.quorum.description {
                Some(d) if addr == self.quorum.leader_addr => {
                    self.connected = Some(addr);
                    return Ok(d.clone());
                }
                _ => last = QuorumError::NotLeader { addr },
            }
        }
        Err(last)
    }
    async fn add_voter(
        &mut self,
        node_id: i32,
        directory_id: Uuid,
        endpoint: &Endpoint,
    ) -> Result<(), QuorumError> {
        let addr = self.connected.clone().unwrap_or_default();
        self.quorum.calls.lock().expect("lock").push(format!(
            "add_voter {addr} {node_id} {} {}",
            kafka_uuid::to_string(directory_id),
            endpoint.address()
        ));
        self.quorum.change_result.clone()
    }
    async fn remove_voter(&mut self, node_id: i32, directory_id: Uuid) -> Result<(), QuorumError> {
        let addr = self.connected.clone().unwrap_or_default();
        self.quorum.calls.lock().expect("lock").push(format!(
            "remove_voter {addr} {node_id} {}",
            kafka_uuid::to_string(directory_id)
        ));
        self.quorum.change_result.clone()
    }
    async fn upgrade_kraft_version(&mut self) -> Result<(), QuorumError> {
        let addr = self.connected.clone().unwrap_or_default();
        self.quorum
            .calls
            .lock()
            .expect("lock")
            .push(format!("upgrade_kraft_version {addr}"));
        self.quorum.change_result.clone()
    }
    async fn unregister_controller(
        &mut self,
        node_id: i32,
    ) -> Result<super::Unregistration, QuorumError> {
        let Some(answer) = self.quorum.unregistration.clone() else {
            return Ok(super::Unregistration::Unsupported {
                reason: "the controllers do not serve UnregisterController (api 94)".into(),
            });
        };
        let addr = self.connected.clone().unwrap_or_default();
        self.quorum
            .calls
            .lock()
            .expect("lock")
            .push(format!("unregister {addr} {node_id}"));
        answer
    }
    async fn ensure_broker_acls(&mut self, principal: &str) -> Result<usize, QuorumError> {
        let addr = self.connected.clone().unwrap_or_default();
        self.quorum
            .calls
            .lock()
            .expect("lock")
            .push(format!("ensure_broker_acls {addr} {principal}"));
        let mut acls = self.quorum.broker_acls.lock().expect("lock");
        let mut created = 0;
        for acl in kraft_controller::admin::broker_acls(principal) {
            let key = format!(
                "{} {}:{} op {}",
                acl.principal, acl.resource_type, acl.resource_name, acl.operation
            );
            if !acls.contains(&key) {
                acls.push(key);
                created += 1;
            }
        }
        Ok(created)
    }
}
