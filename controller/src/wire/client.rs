//! The client side of the wire: a pipelined [`Connection`] (many requests in
//! flight on one TCP connection, answers matched by correlation id, a timeout
//! per request) and a [`PeerManager`] that keeps one connection per peer
//! controller, reconnects with backoff, and delivers answers on a channel so
//! an event loop never waits on the network.
//!
//! It owns sockets and correlation ids; it must not interpret answers (error
//! codes, leaders): that is for the raft engine and the admin client.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicI32, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use rustls_pki_types::ServerName;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpStream,
    sync::{mpsc, oneshot},
    task::JoinHandle,
    time::Instant,
};
use tokio_util::codec::{FramedRead, FramedWrite};

use super::{
    KafkaFrameCodec, WireError, decode_response, encode_request, request_api_key,
    response_correlation_id,
    response_limit::{ResponseFrameCodec, SMALL_RESPONSE_MAX_BYTES, max_response_bytes},
    tls::TlsClient,
};

/// Settings of outbound connections (names are Kafka's configs).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `controller.quorum.request.timeout.ms`: how long one request may wait
    /// for its answer (default 2000 ms). A request that times out closes its
    /// connection, as Kafka's `NetworkClient` does, so that a dead peer is
    /// noticed; the other requests in flight on it fail with
    /// [`ClientError::Disconnected`].
    pub request_timeout: Duration,
    /// `socket.connection.setup.timeout.ms`: how long a TCP connect may take
    /// (default 10000 ms in Kafka; 2000 ms here, like the request timeout, so
    /// that a dead voter does not hold up its peer's queue).
    pub connect_timeout: Duration,
    /// `controller.quorum.retry.backoff.ms`: wait after a failed connect before
    /// the next attempt (default 20 ms); doubles on each further failure up to
    /// `reconnect_backoff_max`, and resets on success.
    pub retry_backoff: Duration,
    /// `reconnect.backoff.max.ms`: the cap of that backoff (default 1000 ms).
    pub reconnect_backoff_max: Duration,
    /// Ceiling of every response frame, bytes (default 104857600); each
    /// response is further capped by what its request can need
    /// (`wire::response_limit`: Fetch/FetchSnapshot their max bytes + 64 KiB,
    /// others 1 MiB), and a larger one closes the connection.
    pub max_frame_bytes: usize,
    /// `client.id` sent in every request header.
    pub client_id: String,
    /// TLS of outgoing connections (`security.protocol=SSL`, Kafka's
    /// `ssl.*`): `None` is PLAINTEXT. The TLS handshake counts in
    /// `connect_timeout`; the host name dialled is the name checked against
    /// the server's certificate (unless endpoint identification is off).
    pub tls: Option<Arc<TlsClient>>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_millis(2000),
            connect_timeout: Duration::from_millis(2000),
            retry_backoff: Duration::from_millis(20),
            reconnect_backoff_max: Duration::from_millis(1000),
            max_frame_bytes: super::DEFAULT_MAX_FRAME_BYTES,
            client_id: "kraft-controller".to_owned(),
            tls: None,
        }
    }
}

/// Errors of outbound requests.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    /// The TCP connect failed.
    #[error("cannot connect to {addr}: {reason}")]
    Connect {
        /// Address dialled, `host:port`.
        addr: String,
        /// The i/o error.
        reason: String,
    },
    /// The TLS handshake failed (untrusted certificate, no common protocol,
    /// a plaintext server, …).
    #[error("TLS handshake with {addr} failed: {reason}")]
    Tls {
        /// Address dialled.
        addr: String,
        /// What the handshake said.
        reason: String,
    },
    /// The TCP connect did not finish in time.
    #[error("connecting to {addr} timed out after {timeout_ms} ms")]
    ConnectTimeout {
        /// Address dialled.
        addr: String,
        /// The connect timeout, ms.
        timeout_ms: u128,
    },
    /// No answer within the request timeout; the connection was closed.
    #[error("{api_key:?} request to {addr} timed out after {timeout_ms} ms")]
    Timeout {
        /// Api of the request.
        api_key: ApiKey,
        /// Peer address.
        addr: String,
        /// The request timeout, ms.
        timeout_ms: u128,
    },
    /// The connection closed before the answer came.
    #[error("connection to {addr} closed: {reason}")]
    Disconnected {
        /// Peer address.
        addr: String,
        /// Why it closed.
        reason: String,
    },
    /// The request could not be encoded, or the answer could not be decoded.
    #[error("{0}")]
    Wire(String),
    /// A connect to this peer failed recently; no attempt before the backoff ends.
    #[error("node {node_id} is in reconnect backoff for {remaining_ms} more ms")]
    Backoff {
        /// The peer.
        node_id: i32,
        /// Time left, ms.
        remaining_ms: u128,
    },
    /// No answer to a [`Connection::call_raw`] within its timeout.
    #[error("request of api {api_key} to {addr} timed out after {timeout_ms} ms")]
    RawTimeout {
        /// Api key of the request.
        api_key: i16,
        /// Where it went.
        addr: String,
        /// The timeout, ms.
        timeout_ms: u128,
    },
    /// [`PeerManager::send`] to a node it has no address for.
    #[error("no address known for node {0}")]
    UnknownNode(i32),
}

impl From<WireError> for ClientError {
    fn from(e: WireError) -> Self {
        ClientError::Wire(e.to_string())
    }
}

#[path = "client_raw.rs"]
mod raw;

struct Pending {
    api_version: i16,
    /// Largest answer accepted, bytes ([`max_response_bytes`]).
    max_response_bytes: usize,
    reply: Reply,
}

/// Where an answer goes, and how it is decoded.
enum Reply {
    /// A `kafka-protocol` response of `api_key`.
    Decoded {
        api_key: ApiKey,
        reply: oneshot::Sender<Result<ResponseKind, ClientError>>,
    },
    /// The body after a response header v1, for the apis `kafka-protocol`
    /// lacks ([`super::own_messages`]).
    Raw(oneshot::Sender<Result<Bytes, ClientError>>),
}

impl Reply {
    fn fail(self, error: ClientError) {
        match self {
            Reply::Decoded { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Reply::Raw(reply) => {
                let _ = reply.send(Err(error));
            }
        }
    }
}

struct Shared {
    addr: String,
    pending: Mutex<HashMap<i32, Pending>>,
    closed: AtomicBool,
    next_correlation_id: AtomicI32,
}

impl Shared {
    /// Marks the connection closed and fails every request in flight.
    fn close(&self, reason: &str) {
        self.closed.store(true, Ordering::SeqCst);
        let drained: Vec<Pending> = match self.pending.lock() {
            Ok(mut map) => map.drain().map(|(_, p)| p).collect(),
            Err(poisoned) => poisoned.into_inner().drain().map(|(_, p)| p).collect(),
        };
        for p in drained {
            p.reply.fail(ClientError::Disconnected {
                addr: self.addr.clone(),
                reason: reason.to_owned(),
            });
        }
    }

    fn take(&self, correlation_id: i32) -> Option<Pending> {
        match self.pending.lock() {
            Ok(mut map) => map.remove(&correlation_id),
            Err(poisoned) => poisoned.into_inner().remove(&correlation_id),
        }
    }

    fn max_response_bytes(&self, correlation_id: i32) -> Option<usize> {
        let limit =
            |map: &HashMap<i32, Pending>| map.get(&correlation_id).map(|p| p.max_response_bytes);
        match self.pending.lock() {
            Ok(map) => limit(&map),
            Err(poisoned) => limit(&poisoned.into_inner()),
        }
    }

    fn insert(&self, correlation_id: i32, pending: Pending) {
        match self.pending.lock() {
            Ok(mut map) => map.insert(correlation_id, pending),
            Err(poisoned) => poisoned.into_inner().insert(correlation_id, pending),
        };
    }
}

/// One pipelined Kafka connection. Cheap to share behind an `Arc`: `call`
/// takes `&self`, and any number of calls may be in flight at once; answers
/// are matched to callers by correlation id. Dropping the connection closes
/// the socket and fails whatever is still in flight.
#[derive(Debug)]
pub struct Connection {
    shared: Arc<Shared>,
    outbound: mpsc::UnboundedSender<Bytes>,
    config: ClientConfig,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("addr", &self.addr)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to `addr` (`host:port`) within `config.connect_timeout`,
    /// with TLS when `config.tls` is set.
    /// Errors: [`ClientError::Connect`], [`ClientError::ConnectTimeout`],
    /// [`ClientError::Tls`].
    pub async fn connect(addr: &str, config: ClientConfig) -> Result<Connection, ClientError> {
        let deadline = Instant::now() + config.connect_timeout;
        let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                return Err(ClientError::Connect {
                    addr: addr.to_owned(),
                    reason: e.to_string(),
                });
            }
            Err(_) => {
                return Err(ClientError::ConnectTimeout {
                    addr: addr.to_owned(),
                    timeout_ms: config.connect_timeout.as_millis(),
                });
            }
        };
        let _ = stream.set_nodelay(true);
        let Some(tls) = config.tls.clone() else {
            return Ok(Self::from_stream(addr, stream, config));
        };
        let host = crate::config::parse_host_port(addr)
            .map(|(host, _)| host)
            .unwrap_or_else(|_| addr.to_owned());
        let name = ServerName::try_from(host).map_err(|e| ClientError::Tls {
            addr: addr.to_owned(),
            reason: format!("not a host name: {e}"),
        })?;
        let connector = tokio_rustls::TlsConnector::from(tls.current());
        match tokio::time::timeout_at(deadline, connector.connect(name, stream)).await {
            Ok(Ok(stream)) => Ok(Self::from_stream(addr, stream, config)),
            Ok(Err(e)) => Err(ClientError::Tls {
                addr: addr.to_owned(),
                reason: e.to_string(),
            }),
            Err(_) => Err(ClientError::ConnectTimeout {
                addr: addr.to_owned(),
                timeout_ms: config.connect_timeout.as_millis(),
            }),
        }
    }

    /// Wraps an already connected stream, plain or TLS (used by tests and by
    /// callers that dial themselves).
    pub fn from_stream<S>(addr: &str, stream: S, config: ClientConfig) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read_half, write_half) = tokio::io::split(stream);
        let shared = Arc::new(Shared {
            addr: addr.to_owned(),
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            next_correlation_id: AtomicI32::new(0),
        });
        let (outbound, mut outbound_rx) = mpsc::unbounded_channel::<Bytes>();

        let writer_shared = shared.clone();
        let codec = KafkaFrameCodec::new(config.max_frame_bytes);
        let mut sink = FramedWrite::new(write_half, codec);
        let writer = tokio::spawn(async move {
            while let Some(frame) = outbound_rx.recv().await {
                if let Err(e) = sink.send(frame).await {
                    writer_shared.close(&format!("write failed: {e}"));
                    return;
                }
            }
        });

        let reader_shared = shared.clone();
        let limits = shared.clone();
        let read_codec = ResponseFrameCodec::new(
            move |id| limits.max_response_bytes(id),
            SMALL_RESPONSE_MAX_BYTES.min(config.max_frame_bytes),
        );
        let mut frames = FramedRead::new(read_half, read_codec);
        let reader = tokio::spawn(async move {
            let reason = loop {
                match frames.next().await {
                    None => break "closed by peer".to_owned(),
                    Some(Err(e)) => break format!("read failed: {e}"),
                    Some(Ok(frame)) => {
                        let frame = frame.freeze();
                        let correlation_id = match response_correlation_id(&frame) {
                            Ok(id) => id,
                            Err(e) => break e.to_string(),
                        };
                        let Some(pending) = reader_shared.take(correlation_id) else {
                            // Kafka's NetworkClient treats this as fatal too:
                            // the stream is out of step with our requests.
                            break format!("response with unknown correlation id {correlation_id}");
                        };
                        let (api_key, reply) = match pending.reply {
                            Reply::Decoded { api_key, reply } => (api_key, reply),
                            Reply::Raw(reply) => {
                                let _ = reply.send(raw::response_body(frame));
                                continue;
                            }
                        };
                        let result = decode_response(api_key, pending.api_version, frame.clone())
                            .or_else(|e| {
                                // KIP-511: a server that does not support our
                                // ApiVersions version answers at v0.
                                if api_key == ApiKey::ApiVersions && pending.api_version > 0 {
                                    decode_response(ApiKey::ApiVersions, 0, frame).map_err(|_| e)
                                } else {
                                    Err(e)
                                }
                            })
                            .map(|(_, body)| body)
                            .map_err(ClientError::from);
                        let _ = reply.send(result);
                    }
                }
            };
            reader_shared.close(&reason);
        });

        Connection {
            shared,
            outbound,
            config,
            reader,
            writer,
        }
    }

    /// The peer address, `host:port`.
    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// Whether the connection is closed (by either side, an error or a timeout).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends `body` at `api_version` and waits for its answer, at most the
    /// request timeout. Errors: [`ClientError::Timeout`] (the connection is
    /// then closed), [`ClientError::Disconnected`], [`ClientError::Wire`] (the
    /// body is not one of our apis, does not fit the version, or the answer
    /// did not decode).
    pub async fn call(
        &self,
        api_version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, ClientError> {
        self.call_with_timeout(api_version, body, self.config.request_timeout)
            .await
    }

    /// [`Connection::call`] with its own timeout instead of the configured
    /// request timeout (for requests that wait on the server, such as
    /// AddRaftVoter with its `timeout_ms`).
    pub async fn call_with_timeout(
        &self,
        api_version: i16,
        body: RequestKind,
        timeout: Duration,
    ) -> Result<ResponseKind, ClientError> {
        let api_key = request_api_key(&body).ok_or_else(|| {
            ClientError::Wire("request body is not one of the apis this client sends".to_owned())
        })?;
        let reply = self.start(api_key, api_version, &body)?;
        match tokio::time::timeout(timeout, reply).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ClientError::Disconnected {
                addr: self.shared.addr.clone(),
                reason: "connection task ended".to_owned(),
            }),
            Err(_) => {
                self.close("request timed out");
                Err(ClientError::Timeout {
                    api_key,
                    addr: self.shared.addr.clone(),
                    timeout_ms: timeout.as_millis(),
                })
            }
        }
    }

    fn start(
        &self,
        api_key: ApiKey,
        api_version: i16,
        body: &RequestKind,
    ) -> Result<oneshot::Receiver<Result<ResponseKind, ClientError>>, ClientError> {
        self.check_open()?;
        let correlation_id = self.next_correlation_id();
        let frame = encode_request(
            api_key,
            api_version,
            correlation_id,
            Some(&self.config.client_id),
            body,
        )?;
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            api_version,
            max_response_bytes: max_response_bytes(body, self.config.max_frame_bytes),
            reply: Reply::Decoded { api_key, reply: tx },
        };
        self.enqueue(correlation_id, frame, pending)?;
        Ok(rx)
    }

    fn check_open(&self) -> Result<(), ClientError> {
        if self.is_closed() {
            return Err(ClientError::Disconnected {
                addr: self.shared.addr.clone(),
                reason: "connection already closed".to_owned(),
            });
        }
        Ok(())
    }

    fn next_correlation_id(&self) -> i32 {
        self.shared
            .next_correlation_id
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |id| {
                Some(if id == i32::MAX { 0 } else { id + 1 })
            })
            .unwrap_or(0)
    }

    /// Registers `pending` under `correlation_id` and writes `frame`.
    fn enqueue(
        &self,
        correlation_id: i32,
        frame: Bytes,
        pending: Pending,
    ) -> Result<(), ClientError> {
        self.shared.insert(correlation_id, pending);
        // A close that drained the map before our insert must not leave this
        // request waiting for its timeout.
        if self.is_closed() && self.shared.take(correlation_id).is_some() {
            return Err(ClientError::Disconnected {
                addr: self.shared.addr.clone(),
                reason: "connection closed".to_owned(),
            });
        }
        if self.outbound.send(frame).is_err() {
            self.shared.take(correlation_id);
            return Err(ClientError::Disconnected {
                addr: self.shared.addr.clone(),
                reason: "writer task ended".to_owned(),
            });
        }
        Ok(())
    }

    /// Closes the connection and fails every request in flight.
    pub fn close(&self, reason: &str) {
        self.reader.abort();
        self.writer.abort();
        self.shared.close(reason);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close("connection dropped");
    }
}

/// An answer (or failure) to a request sent with [`PeerManager::send`].
#[derive(Debug)]
pub struct PeerResponse {
    /// The peer the request went to.
    pub node_id: i32,
    /// The caller's tag given to `send`, to match the answer to its request.
    pub tag: u64,
    /// Api of the request.
    pub api_key: ApiKey,
    /// The answer, or why there is none.
    pub result: Result<ResponseKind, ClientError>,
}

struct PeerRequest {
    api_key: ApiKey,
    api_version: i16,
    body: RequestKind,
    tag: u64,
}

#[derive(Debug)]
struct Peer {
    addr: String,
    requests: mpsc::UnboundedSender<PeerRequest>,
    task: JoinHandle<()>,
}

/// Outbound connections to the other controllers, one pipelined
/// [`Connection`] per peer, for the server's event loop.
///
/// [`PeerManager::send`] returns at once; the answer arrives later on the
/// channel given to [`PeerManager::new`] as a [`PeerResponse`] carrying the
/// caller's tag. A peer is dialled on first use; when its connection closes
/// (or a request on it times out, which closes it) the next request dials
/// again, resolving the host name afresh: no resolved address is kept, so a
/// pod re-created under the same name with a new IP is reached on the first
/// new connection. A failed dial fails that request at once
/// and starts a backoff (`retry_backoff`, doubling up to
/// `reconnect_backoff_max`) during which requests to the peer fail with
/// [`ClientError::Backoff`] without touching the network, as Kafka's
/// `NetworkClient` does for a node that is not ready. Must be used inside a
/// tokio runtime. Dropping the manager closes every connection.
#[derive(Debug)]
pub struct PeerManager {
    config: ClientConfig,
    peers: HashMap<i32, Peer>,
    responses: mpsc::UnboundedSender<PeerResponse>,
}

impl PeerManager {
    /// A manager that delivers answers on `responses`.
    pub fn new(config: ClientConfig, responses: mpsc::UnboundedSender<PeerResponse>) -> Self {
        Self {
            config,
            peers: HashMap::new(),
            responses,
        }
    }

    /// Sets the address (`host:port`) of `node_id`. A changed address closes
    /// the old connection (requests in flight on it fail); the same address
    /// keeps it.
    pub fn set_peer(&mut self, node_id: i32, addr: &str) {
        if self.peers.get(&node_id).is_some_and(|p| p.addr == addr) {
            return;
        }
        self.remove_peer(node_id);
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(peer_task(
            node_id,
            addr.to_owned(),
            self.config.clone(),
            rx,
            self.responses.clone(),
        ));
        self.peers.insert(
            node_id,
            Peer {
                addr: addr.to_owned(),
                requests: tx,
                task,
            },
        );
    }

    /// Forgets `node_id` and closes its connection.
    pub fn remove_peer(&mut self, node_id: i32) {
        if let Some(peer) = self.peers.remove(&node_id) {
            peer.task.abort();
        }
    }

    /// The address known for `node_id`.
    pub fn peer_addr(&self, node_id: i32) -> Option<&str> {
        self.peers.get(&node_id).map(|p| p.addr.as_str())
    }

    /// Queues `body` at `api_version` for `node_id`; never waits. The answer
    /// comes as a [`PeerResponse`] with `tag`. Errors (returned at once, no
    /// response follows): [`ClientError::UnknownNode`], [`ClientError::Wire`]
    /// for a body of an api this client does not send.
    pub fn send(
        &self,
        node_id: i32,
        api_version: i16,
        body: RequestKind,
        tag: u64,
    ) -> Result<(), ClientError> {
        let peer = self
            .peers
            .get(&node_id)
            .ok_or(ClientError::UnknownNode(node_id))?;
        let api_key = request_api_key(&body).ok_or_else(|| {
            ClientError::Wire("request body is not one of the apis this client sends".to_owned())
        })?;
        peer.requests
            .send(PeerRequest {
                api_key,
                api_version,
                body,
                tag,
            })
            .map_err(|_| ClientError::Disconnected {
                addr: peer.addr.clone(),
                reason: "peer task ended".to_owned(),
            })
    }
}

impl Drop for PeerManager {
    fn drop(&mut self) {
        for peer in self.peers.values() {
            peer.task.abort();
        }
    }
}

async fn peer_task(
    node_id: i32,
    addr: String,
    config: ClientConfig,
    mut requests: mpsc::UnboundedReceiver<PeerRequest>,
    responses: mpsc::UnboundedSender<PeerResponse>,
) {
    let mut connection: Option<Arc<Connection>> = None;
    let mut next_attempt: Option<Instant> = None;
    let mut backoff = config.retry_backoff;
    while let Some(request) = requests.recv().await {
        if connection.as_ref().is_some_and(|c| c.is_closed()) {
            connection = None;
        }
        if connection.is_none() {
            let now = Instant::now();
            if let Some(at) = next_attempt.filter(|at| *at > now) {
                let _ = responses.send(PeerResponse {
                    node_id,
                    tag: request.tag,
                    api_key: request.api_key,
                    result: Err(ClientError::Backoff {
                        node_id,
                        remaining_ms: (at - now).as_millis(),
                    }),
                });
                continue;
            }
            match Connection::connect(&addr, config.clone()).await {
                Ok(c) => {
                    tracing::debug!(node_id, %addr, "connected to peer");
                    connection = Some(Arc::new(c));
                    next_attempt = None;
                    backoff = config.retry_backoff;
                }
                Err(e) => {
                    tracing::debug!(node_id, %addr, error = %e, "connect to peer failed");
                    next_attempt = Some(Instant::now() + backoff);
                    backoff = (backoff * 2).min(config.reconnect_backoff_max);
                    let _ = responses.send(PeerResponse {
                        node_id,
                        tag: request.tag,
                        api_key: request.api_key,
                        result: Err(e),
                    });
                    continue;
                }
            }
        }
        let Some(conn) = connection.clone() else {
            continue;
        };
        let responses = responses.clone();
        tokio::spawn(async move {
            let result = conn.call(request.api_version, request.body).await;
            let _ = responses.send(PeerResponse {
                node_id,
                tag: request.tag,
                api_key: request.api_key,
                result,
            });
        });
    }
}
