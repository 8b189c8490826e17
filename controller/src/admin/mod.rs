//! A small Kafka admin client for controller quorums, shared by the
//! `kraft-controller quorum` CLI and the operator: DescribeQuorum,
//! AddRaftVoter, RemoveRaftVoter, DescribeCluster, ApiVersions, UpdateFeatures
//! (`features.rs`) and one
//! CLUSTER ACL (DescribeAcls, CreateAcls: `acls.rs`), over one
//! pipelined [`crate::wire::client::Connection`].
//!
//! Like Kafka's `Admin` with `bootstrap.controllers`, it starts at one
//! controller and sends the requests that only the active controller answers
//! (DescribeQuorum, AddRaftVoter, RemoveRaftVoter) there: when a controller
//! answers NOT_LEADER_OR_FOLLOWER, it asks DescribeCluster (endpoint type
//! controller) who the active controller is and where on the listener it is
//! connected to, connects to it and retries (DescribeQuorum's own leader
//! endpoint, from the voter set, only when DescribeCluster does not know).
//!
//! It owns request building and error mapping; it must not decide policy
//! (when to retry a membership change is the caller's call, helped by
//! [`AdminError::is_retriable`]).

mod acls;
mod bootstrap;
mod features;
mod own_requests;

use std::{net::SocketAddr, time::Duration};

use kafka_protocol::{
    messages::{
        AddRaftVoterRequest, ApiKey, ApiVersionsRequest, ApiVersionsResponse,
        DescribeClusterRequest, DescribeQuorumRequest, RemoveRaftVoterRequest, RequestKind,
        ResponseKind, TopicName, add_raft_voter_request, describe_quorum_request,
        describe_quorum_response::DescribeQuorumResponse,
    },
    protocol::StrBytes,
};
/// Kafka's vocabulary, defined once in `kraft_common` and re-exported here
/// under the names the CLI, the tests and the operator have used.
pub use kraft_common::{Endpoint, METADATA_TOPIC, errors::error_name};
use kraft_common::{
    EndpointType,
    endpoint::host_port,
    errors::{self, NOT_LEADER_OR_FOLLOWER, UNSUPPORTED_VERSION},
    kafka_uuid,
};
use uuid::Uuid;

pub use self::{
    acls::{AllowAcl, BROKER_INTERNAL_TOPICS, broker_acls},
    bootstrap::parse_bootstrap_list,
    features::{UPGRADE_TYPE_SAFE_DOWNGRADE, UPGRADE_TYPE_UNSAFE_DOWNGRADE, UPGRADE_TYPE_UPGRADE},
};
use crate::wire::{
    self,
    client::{ClientConfig, ClientError, Connection},
};

/// How many times a request follows the active controller before giving up.
const MAX_REDIRECTS: usize = 3;

/// Errors of the admin client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    /// The controller answered with a Kafka error code.
    #[error("{name} (error code {code}){}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        /// Kafka's error code.
        code: i16,
        /// Kafka's name of the code, e.g. `NOT_LEADER_OR_FOLLOWER`.
        name: &'static str,
        /// The error message of the response, when it has one.
        message: Option<String>,
    },
    /// Connecting or talking to a controller failed (retriable).
    #[error("i/o with {addr} failed: {reason}")]
    Io {
        /// The controller address.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// No answer in time (retriable).
    #[error("{what} timed out after {timeout_ms} ms")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The timeout, ms.
        timeout_ms: u128,
    },
    /// The answer did not make sense (not retriable).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A bootstrap list (`--bootstrap-controller`) that does not parse (not
    /// retriable); see [`parse_bootstrap_list`].
    #[error("invalid bootstrap controller {entry:?} in {value:?}: {reason}")]
    InvalidBootstrap {
        /// The whole list as given.
        value: String,
        /// The entry refused (trimmed; empty for an empty entry).
        entry: String,
        /// Why.
        reason: String,
    },
    /// No controller of a bootstrap list of several answered.
    #[error("no bootstrap controller answered: {tried}")]
    NoBootstrapAnswered {
        /// Every address tried, in order, each with its error in brackets.
        tried: String,
        /// Whether one of the errors was retriable.
        retriable: bool,
    },
}

impl AdminError {
    /// A Kafka error from a response code (`None` for 0) and message (an
    /// empty message counts as none).
    pub fn from_code(code: i16, message: Option<&StrBytes>) -> Option<AdminError> {
        (code != 0).then(|| AdminError::Kafka {
            code,
            name: error_name(code),
            message: message
                .map(|m| m.as_str().to_owned())
                .filter(|m| !m.is_empty()),
        })
    }

    /// Whether trying again later may succeed: Kafka's retriable error
    /// classes (REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER,
    /// LEADER_NOT_AVAILABLE, NETWORK_EXCEPTION, …, as `Errors.java` marks
    /// them with `RetriableException`), i/o failures and timeouts.
    pub fn is_retriable(&self) -> bool {
        match self {
            AdminError::Kafka { code, .. } => errors::is_retriable(*code),
            AdminError::Io { .. } | AdminError::Timeout { .. } => true,
            AdminError::NoBootstrapAnswered { retriable, .. } => *retriable,
            AdminError::Protocol(_) | AdminError::InvalidBootstrap { .. } => false,
        }
    }

    /// The Kafka error code, for [`AdminError::Kafka`].
    pub fn code(&self) -> Option<i16> {
        match self {
            AdminError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl From<ClientError> for AdminError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Timeout {
                api_key,
                addr,
                timeout_ms,
            } => AdminError::Timeout {
                what: format!("{api_key:?} request to {addr}"),
                timeout_ms,
            },
            ClientError::RawTimeout {
                api_key,
                addr,
                timeout_ms,
            } => AdminError::Timeout {
                what: format!("api {api_key} request to {addr}"),
                timeout_ms,
            },
            ClientError::ConnectTimeout { addr, timeout_ms } => AdminError::Timeout {
                what: format!("connecting to {addr}"),
                timeout_ms,
            },
            ClientError::Connect { addr, reason } | ClientError::Disconnected { addr, reason } => {
                AdminError::Io { addr, reason }
            }
            ClientError::Backoff { node_id, .. } => AdminError::Io {
                addr: format!("node {node_id}"),
                reason: e.to_string(),
            },
            ClientError::Wire(reason) => AdminError::Protocol(reason),
            // An untrusted certificate does not get better by retrying.
            ClientError::Tls { .. } => AdminError::Protocol(e.to_string()),
            ClientError::UnknownNode(_) => AdminError::Protocol(e.to_string()),
        }
    }
}

/// Formats a directory id as Kafka prints a `Uuid`: URL-safe base64 without
/// padding, 22 characters (e.g. in meta.properties `directory.id`).
pub fn kafka_uuid_string(id: Uuid) -> String {
    kafka_uuid::to_string(id)
}

/// Parses a Kafka `Uuid` string as Kafka's `Uuid.fromString` does (see
/// `kraft_common::kafka_uuid::parse`); the hyphenated RFC 4122 form is
/// accepted too, for command-line input.
/// Errors: a message naming the bad value.
pub fn parse_kafka_uuid(s: &str) -> Result<Uuid, String> {
    kafka_uuid::parse_or_rfc4122(s).map_err(|_| {
        format!(
            "'{s}' is not a Kafka uuid (22 characters of URL-safe base64, as in meta.properties)"
        )
    })
}

/// A voter or observer as DescribeQuorum reports it (Kafka's
/// `QuorumInfo.ReplicaState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// Node id.
    pub replica_id: i32,
    /// Directory id (all zero before kraft.version 1).
    pub directory_id: Uuid,
    /// Log end offset the leader knows for it.
    pub log_end_offset: i64,
    /// Wall-clock ms of its last fetch; `None` when unknown (or v0).
    pub last_fetch_timestamp_ms: Option<i64>,
    /// Wall-clock ms when it was last caught up; `None` when unknown (or v0).
    pub last_caught_up_timestamp_ms: Option<i64>,
}

/// A node and its endpoints (DescribeQuorum v2 `nodes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEndpoints {
    /// Node id.
    pub node_id: i32,
    /// Its listeners.
    pub endpoints: Vec<Endpoint>,
}

/// The state of the metadata quorum (Kafka's `QuorumInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumInfo {
    /// Id of the leader.
    pub leader_id: i32,
    /// Epoch of the leader.
    pub leader_epoch: i32,
    /// High watermark (-1 while a new leader has not committed yet).
    pub high_watermark: i64,
    /// Voters, as the leader sees them.
    pub voters: Vec<ReplicaInfo>,
    /// Observers that fetched recently.
    pub observers: Vec<ReplicaInfo>,
    /// Endpoints of the voters (empty before v2).
    pub nodes: Vec<NodeEndpoints>,
}

/// A controller in a DescribeCluster answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerNode {
    /// Node id.
    pub node_id: i32,
    /// Host of the listener the request came in on.
    pub host: String,
    /// Port of that listener.
    pub port: u16,
    /// Rack, if configured.
    pub rack: Option<String>,
}

/// A DescribeCluster answer with endpoint type controller (KIP-919).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    /// The cluster id.
    pub cluster_id: String,
    /// The active controller, -1 when unknown.
    pub controller_id: i32,
    /// The controllers.
    pub nodes: Vec<ControllerNode>,
}

/// A Kafka admin client for one controller quorum; see the module doc.
#[derive(Debug)]
pub struct AdminClient {
    bootstrap: String,
    conn: Connection,
    /// Node id of the controller `conn` goes to, once known.
    connected_node: Option<i32>,
    api_versions: ApiVersionsResponse,
    timeout: Duration,
    /// TLS of every connection (`security.protocol=SSL`); `None`: PLAINTEXT.
    tls: Option<std::sync::Arc<crate::wire::tls::TlsClient>>,
}

impl AdminClient {
    /// Connects to the controller at `addr` (`host:port`) and negotiates
    /// versions with ApiVersions. `timeout` bounds the connect and every
    /// request. Errors: [`AdminError::Io`], [`AdminError::Timeout`],
    /// [`AdminError::Kafka`] when ApiVersions fails.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<AdminClient, AdminError> {
        Self::connect_with_tls(addr, timeout, None).await
    }

    /// [`AdminClient::connect`] over TLS when `tls` is set (the settings of
    /// `--command-config`, Kafka's `security.protocol=SSL` and `ssl.*`); the
    /// controllers it follows are dialled the same way.
    ///
    /// `addr` is one `host:port` or a comma-separated list of them, as
    /// Kafka's tools take `--bootstrap-controller` (`bootstrap.controllers`):
    /// the list is parsed first ([`parse_bootstrap_list`]), then each address
    /// is tried in the given order and the first that connects and answers
    /// ApiVersions is kept.
    ///
    /// Errors: [`AdminError::InvalidBootstrap`] for a list that does not
    /// parse (nothing is dialled); for a single address its error, as
    /// [`AdminClient::connect`] (a failed handshake is
    /// [`AdminError::Protocol`]); for several, when none answers,
    /// [`AdminError::NoBootstrapAnswered`] naming each and its error.
    pub async fn connect_with_tls(
        addr: &str,
        timeout: Duration,
        tls: Option<std::sync::Arc<crate::wire::tls::TlsClient>>,
    ) -> Result<AdminClient, AdminError> {
        let mut tried = Vec::new();
        for one in parse_bootstrap_list(addr)? {
            match Self::open(&one, timeout, tls.clone()).await {
                Ok((conn, api_versions)) => {
                    return Ok(AdminClient {
                        bootstrap: addr.to_owned(),
                        conn,
                        connected_node: None,
                        api_versions,
                        timeout,
                        tls,
                    });
                }
                Err(e) => {
                    tracing::debug!(addr = %one, error = %e, "bootstrap controller unreachable");
                    tried.push((one, e));
                }
            }
        }
        Err(bootstrap::none_answered(tried))
    }

    /// Connects to the first of `bootstrap` that accepts and answers
    /// ApiVersions, in the given order (Kafka's `Admin` with
    /// `bootstrap.controllers`); requests that need the active controller
    /// then follow it from there. One connection: the caller keeps the client
    /// for as many requests as it likes.
    ///
    /// Errors: the last controller's [`AdminError`]; [`AdminError::Io`] when
    /// `bootstrap` is empty.
    pub async fn connect_any(
        bootstrap: &[SocketAddr],
        timeout: Duration,
    ) -> Result<AdminClient, AdminError> {
        let mut last = AdminError::Io {
            addr: String::new(),
            reason: "no bootstrap controllers to connect to".into(),
        };
        for addr in bootstrap {
            match Self::connect(&addr.to_string(), timeout).await {
                Ok(client) => return Ok(client),
                Err(e) => {
                    tracing::debug!(%addr, error = %e, "bootstrap controller unreachable");
                    last = e;
                }
            }
        }
        Err(last)
    }

    async fn open(
        addr: &str,
        timeout: Duration,
        tls: Option<std::sync::Arc<crate::wire::tls::TlsClient>>,
    ) -> Result<(Connection, ApiVersionsResponse), AdminError> {
        let config = ClientConfig {
            request_timeout: timeout,
            connect_timeout: timeout,
            client_id: "kraft-controller-admin".to_owned(),
            tls,
            ..ClientConfig::default()
        };
        let conn = Connection::connect(addr, config).await?;
        let api_versions = Self::negotiate(&conn).await?;
        Ok((conn, api_versions))
    }

    async fn negotiate(conn: &Connection) -> Result<ApiVersionsResponse, AdminError> {
        let ours = wire::supported_api(ApiKey::ApiVersions)
            .map(|a| a.max_version)
            .unwrap_or(0);
        let mut version = ours;
        for _ in 0..2 {
            let request = ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("kraft-controller"))
                .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
            let ResponseKind::ApiVersions(response) = conn
                .call(version, RequestKind::ApiVersions(request))
                .await?
            else {
                return Err(AdminError::Protocol(
                    "ApiVersions answered with another api".into(),
                ));
            };
            if response.error_code == UNSUPPORTED_VERSION {
                // KIP-511: retry with the highest version the server listed.
                let theirs = response
                    .api_keys
                    .iter()
                    .find(|a| a.api_key == ApiKey::ApiVersions as i16)
                    .map(|a| a.max_version)
                    .unwrap_or(0);
                version = theirs.min(ours);
                continue;
            }
            if let Some(e) = AdminError::from_code(response.error_code, None) {
                return Err(e);
            }
            return Ok(response);
        }
        Err(AdminError::Protocol(
            "ApiVersions kept answering UNSUPPORTED_VERSION".into(),
        ))
    }

    /// The address this client was bootstrapped with.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// The address of the controller requests currently go to.
    pub fn connected_addr(&self) -> &str {
        self.conn.addr()
    }

    fn version(&self, key: ApiKey) -> Result<i16, AdminError> {
        wire::negotiate(key, &self.api_versions.api_keys).ok_or_else(|| AdminError::Kafka {
            code: UNSUPPORTED_VERSION,
            name: error_name(UNSUPPORTED_VERSION),
            message: Some(format!(
                "controller at {} does not support {key:?} in a version we speak",
                self.conn.addr()
            )),
        })
    }

    /// The ApiVersions answer of the controller requests go to.
    pub fn api_versions(&self) -> &ApiVersionsResponse {
        &self.api_versions
    }

    /// Sends ApiVersions again and returns the answer.
    pub async fn refresh_api_versions(&mut self) -> Result<ApiVersionsResponse, AdminError> {
        self.api_versions = Self::negotiate(&self.conn).await?;
        Ok(self.api_versions.clone())
    }

    /// DescribeCluster with endpoint type controller: the cluster id, the
    /// active controller and the controllers. Errors: [`AdminError`]; a
    /// controller that only speaks v0 (no endpoint type) is UNSUPPORTED_VERSION.
    pub async fn describe_cluster(&mut self) -> Result<ClusterInfo, AdminError> {
        let version = self.version(ApiKey::DescribeCluster)?;
        if version < 1 {
            return Err(AdminError::Kafka {
                code: UNSUPPORTED_VERSION,
                name: error_name(UNSUPPORTED_VERSION),
                message: Some("DescribeCluster v1+ is needed for endpoint type controller".into()),
            });
        }
        let request =
            DescribeClusterRequest::default().with_endpoint_type(EndpointType::Controller.code());
        let ResponseKind::DescribeCluster(r) = self
            .conn
            .call(version, RequestKind::DescribeCluster(request))
            .await?
        else {
            return Err(AdminError::Protocol(
                "DescribeCluster answered with another api".into(),
            ));
        };
        if let Some(e) = AdminError::from_code(r.error_code, r.error_message.as_ref()) {
            return Err(e);
        }
        let nodes = r
            .brokers
            .iter()
            .map(|b| {
                Ok(ControllerNode {
                    node_id: b.broker_id.0,
                    host: b.host.as_str().to_owned(),
                    port: u16::try_from(b.port).map_err(|_| {
                        AdminError::Protocol(format!("node {} has port {}", b.broker_id.0, b.port))
                    })?,
                    rack: b.rack.as_ref().map(|r| r.as_str().to_owned()),
                })
            })
            .collect::<Result<Vec<_>, AdminError>>()?;
        Ok(ClusterInfo {
            cluster_id: r.cluster_id.as_str().to_owned(),
            controller_id: r.controller_id.0,
            nodes,
        })
    }

    /// Moves the connection to the active controller, found with
    /// DescribeCluster. Errors: NOT_LEADER_OR_FOLLOWER (retriable) when no
    /// controller knows the leader, or when we already talk to it.
    async fn follow_active_controller(&mut self) -> Result<(), AdminError> {
        let cluster = self.describe_cluster().await?;
        let not_leader = |message: String| AdminError::Kafka {
            code: NOT_LEADER_OR_FOLLOWER,
            name: error_name(NOT_LEADER_OR_FOLLOWER),
            message: Some(message),
        };
        if cluster.controller_id < 0 {
            return Err(not_leader("the quorum has no leader right now".into()));
        }
        if self.connected_node == Some(cluster.controller_id) {
            return Err(not_leader(format!(
                "node {} is reported as the active controller but is not the leader",
                cluster.controller_id
            )));
        }
        let node = cluster
            .nodes
            .iter()
            .find(|n| n.node_id == cluster.controller_id)
            .ok_or_else(|| {
                not_leader(format!(
                    "no endpoint known for the active controller {}",
                    cluster.controller_id
                ))
            })?;
        let (node_id, host, port) = (node.node_id, node.host.clone(), node.port);
        self.reconnect(node_id, &host, port).await
    }

    /// Replaces the connection with one to `node_id` at `host:port`.
    async fn reconnect(&mut self, node_id: i32, host: &str, port: u16) -> Result<(), AdminError> {
        let addr = host_port(host, port);
        tracing::debug!(node_id, %addr, "following the active controller");
        let (conn, api_versions) = Self::open(&addr, self.timeout, self.tls.clone()).await?;
        self.conn = conn;
        self.api_versions = api_versions;
        self.connected_node = Some(node_id);
        Ok(())
    }

    /// DescribeQuorum of `__cluster_metadata-0`, answered by the active
    /// controller (Kafka's `Admin.describeMetadataQuorum`). Timestamps of -1
    /// become `None`. Errors: [`AdminError`].
    pub async fn describe_quorum(&mut self) -> Result<QuorumInfo, AdminError> {
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let version = self.version(ApiKey::DescribeQuorum)?;
            let request = DescribeQuorumRequest::default().with_topics(vec![
                describe_quorum_request::TopicData::default()
                    .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
                    .with_partitions(vec![
                        describe_quorum_request::PartitionData::default().with_partition_index(0),
                    ]),
            ]);
            let ResponseKind::DescribeQuorum(r) = self
                .conn
                .call(version, RequestKind::DescribeQuorum(request))
                .await?
            else {
                return Err(AdminError::Protocol(
                    "DescribeQuorum answered with another api".into(),
                ));
            };
            match quorum_info(&r) {
                Err(e) if e.code() == Some(NOT_LEADER_OR_FOLLOWER) => {
                    last = Some(e);
                    // DescribeCluster names the active controller on the
                    // listener this client came in on (and so its protocol);
                    // the leader's voter endpoint that DescribeQuorum names
                    // only when DescribeCluster does not know it.
                    if let Err(follow) = self.follow_active_controller().await {
                        match leader_hint(&r) {
                            Some((id, endpoint)) if self.connected_node != Some(id) => {
                                self.reconnect(id, &endpoint.host, endpoint.port).await?;
                            }
                            _ => return Err(follow),
                        }
                    }
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| AdminError::Protocol("no DescribeQuorum answer".into())))
    }

    /// AddRaftVoter (KIP-853): adds `(voter_id, directory_id)` with its
    /// `endpoints`; the leader answers once the change is committed or
    /// `timeout_ms` passes. Sent at v1 (KIP-1186, `AckWhenCommitted` true)
    /// to a controller that advertises it, v0 otherwise. Errors: [`AdminError`]; REQUEST_TIMED_OUT (the
    /// voter is not caught up, or another change is pending) is retriable.
    pub async fn add_raft_voter(
        &mut self,
        voter_id: i32,
        directory_id: Uuid,
        endpoints: &[Endpoint],
        timeout_ms: i32,
    ) -> Result<(), AdminError> {
        let listeners: Vec<_> = endpoints
            .iter()
            .map(|e| {
                add_raft_voter_request::Listener::default()
                    .with_name(StrBytes::from_string(e.name.clone()))
                    .with_host(StrBytes::from_string(e.host.clone()))
                    .with_port(e.port)
            })
            .collect();
        let wait = self.timeout + Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let request = AddRaftVoterRequest::default()
                .with_cluster_id(None)
                .with_timeout_ms(timeout_ms)
                .with_voter_id(voter_id)
                .with_voter_directory_id(directory_id)
                .with_listeners(listeners.clone());
            let r = match self.add_raft_voter_v1_version() {
                // KIP-1186: v1 where the controller has it (Kafka 4.2+),
                // with AckWhenCommitted true: answered at commit, as v0.
                Some(version) => self.add_raft_voter_v1(request, version, wait).await?,
                None => {
                    let version = self.version(ApiKey::AddRaftVoter)?;
                    let ResponseKind::AddRaftVoter(r) = self
                        .conn
                        .call_with_timeout(version, RequestKind::AddRaftVoter(request), wait)
                        .await?
                    else {
                        return Err(AdminError::Protocol(
                            "AddRaftVoter answered with another api".into(),
                        ));
                    };
                    r
                }
            };
            match AdminError::from_code(r.error_code, r.error_message.as_ref()) {
                None => return Ok(()),
                Some(e) if e.code() == Some(NOT_LEADER_OR_FOLLOWER) => {
                    last = Some(e);
                    self.follow_active_controller().await?;
                }
                Some(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| AdminError::Protocol("no AddRaftVoter answer".into())))
    }

    /// RemoveRaftVoter (KIP-853): removes `(voter_id, directory_id)`; the
    /// leader answers once the change is committed. Errors: [`AdminError`];
    /// VOTER_NOT_FOUND when the pair is not a voter.
    pub async fn remove_raft_voter(
        &mut self,
        voter_id: i32,
        directory_id: Uuid,
    ) -> Result<(), AdminError> {
        let mut last = None;
        for _ in 0..=MAX_REDIRECTS {
            let version = self.version(ApiKey::RemoveRaftVoter)?;
            let request = RemoveRaftVoterRequest::default()
                .with_cluster_id(None)
                .with_voter_id(voter_id)
                .with_voter_directory_id(directory_id);
            let ResponseKind::RemoveRaftVoter(r) = self
                .conn
                .call(version, RequestKind::RemoveRaftVoter(request))
                .await?
            else {
                return Err(AdminError::Protocol(
                    "RemoveRaftVoter answered with another api".into(),
                ));
            };
            match AdminError::from_code(r.error_code, r.error_message.as_ref()) {
                None => return Ok(()),
                Some(e) if e.code() == Some(NOT_LEADER_OR_FOLLOWER) => {
                    last = Some(e);
                    self.follow_active_controller().await?;
                }
                Some(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| AdminError::Protocol("no RemoveRaftVoter answer".into())))
    }
}

/// The leader a NOT_LEADER_OR_FOLLOWER DescribeQuorum answer names, with its
/// first endpoint, when the answer carries both (v2 `nodes`); Kafka's own
/// controllers leave them out, and then DescribeCluster is asked instead.
fn leader_hint(r: &DescribeQuorumResponse) -> Option<(i32, Endpoint)> {
    let leader_id = r
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| p.leader_id.0)
        .find(|id| *id >= 0)?;
    let listener = r
        .nodes
        .iter()
        .find(|n| n.node_id.0 == leader_id)?
        .listeners
        .first()?;
    Some((
        leader_id,
        Endpoint {
            name: listener.name.as_str().to_owned(),
            host: listener.host.as_str().to_owned(),
            port: listener.port,
        },
    ))
}

/// Reads `__cluster_metadata-0` out of a DescribeQuorum answer.
fn quorum_info(r: &DescribeQuorumResponse) -> Result<QuorumInfo, AdminError> {
    if let Some(e) = AdminError::from_code(r.error_code, r.error_message.as_ref()) {
        return Err(e);
    }
    let partition = r
        .topics
        .iter()
        .filter(|t| t.topic_name.0.as_str() == METADATA_TOPIC)
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == 0)
        .ok_or_else(|| {
            AdminError::Protocol(format!("DescribeQuorum answer has no {METADATA_TOPIC}-0"))
        })?;
    if let Some(e) = AdminError::from_code(partition.error_code, partition.error_message.as_ref()) {
        return Err(e);
    }
    let replica =
        |s: &kafka_protocol::messages::describe_quorum_response::ReplicaState| ReplicaInfo {
            replica_id: s.replica_id.0,
            directory_id: s.replica_directory_id,
            log_end_offset: s.log_end_offset,
            last_fetch_timestamp_ms: (s.last_fetch_timestamp >= 0)
                .then_some(s.last_fetch_timestamp),
            last_caught_up_timestamp_ms: (s.last_caught_up_timestamp >= 0)
                .then_some(s.last_caught_up_timestamp),
        };
    Ok(QuorumInfo {
        leader_id: partition.leader_id.0,
        leader_epoch: partition.leader_epoch,
        high_watermark: partition.high_watermark,
        voters: partition.current_voters.iter().map(replica).collect(),
        observers: partition.observers.iter().map(replica).collect(),
        nodes: r
            .nodes
            .iter()
            .map(|n| NodeEndpoints {
                node_id: n.node_id.0,
                endpoints: n
                    .listeners
                    .iter()
                    .map(|l| Endpoint {
                        name: l.name.as_str().to_owned(),
                        host: l.host.as_str().to_owned(),
                        port: l.port,
                    })
                    .collect(),
            })
            .collect(),
    })
}
