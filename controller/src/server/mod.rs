//! The tokio runtime of a controller: the socket listeners (one per
//! controller listener), peer connections, the driver (`event_loop`) that
//! feeds the Raft engine,
//! executes its commands and calls the [`Listener`] above it, timers, and
//! the HTTP endpoint (`/healthz`, `/readyz`, `/metrics`, plus the routes the
//! listener brings).
//!
//! It is generic over the listener: [`run`] takes a factory that builds it
//! (the metadata listener or the benchmark workload, chosen by `cli/run.rs`).
//! It must not contain protocol logic that belongs to the engine (`raft`),
//! nor state machine logic that belongs to a listener: it moves bytes and
//! time in, and carries commands out.

pub mod accept;
pub mod authz;
pub mod connection;
mod convert;
pub mod envelope;
pub mod event_loop;
pub mod exit;
pub mod fit;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod resource_authz;
pub mod stages;

use std::{path::PathBuf, sync::Arc, time::Duration};

use prometheus_client::registry::Registry;
use rand::SeedableRng;
use tokio::sync::{mpsc, watch};

use crate::{
    config::ControllerConfig,
    log::{
        self, FileLog, FileLogConfig, MetaProperties, OffsetAndEpoch, QuorumStateStore,
        meta_properties::uuid_to_kafka_string, snapshot::SnapshotReader,
    },
    raft::{
        self, Endpoint, RaftConfig, RaftEngine, ReplicaKey, Voter, VoterSet, listener::Listener,
    },
    record::{ControlRecord, DecodedBatch, iter_batches},
    wire::client::{ClientConfig, PeerManager},
};

/// Errors that stop a controller at start or while running.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// `metadata.log.dir` has no `meta.properties`.
    #[error("{dir} is not formatted (no meta.properties): run `kraft-controller format` first")]
    NotFormatted {
        /// The log dir.
        dir: PathBuf,
    },
    /// `meta.properties` names another node.
    #[error(
        "node.id in {dir}/meta.properties is {stored}, but the configuration says node.id={configured}"
    )]
    NodeIdMismatch {
        /// The log dir.
        dir: PathBuf,
        /// Id on disk.
        stored: i32,
        /// Id configured.
        configured: i32,
    },
    /// `meta.properties` belongs to another cluster.
    #[error(
        "cluster id in {dir}/meta.properties is {stored}, expected {expected}: this volume holds another cluster's data; refusing to start"
    )]
    ClusterIdMismatch {
        /// The log dir.
        dir: PathBuf,
        /// Id on disk.
        stored: String,
        /// Id expected (`--cluster-id`).
        expected: String,
    },
    /// The log or its files failed.
    #[error(transparent)]
    Log(#[from] log::LogError),
    /// The log dir's files disagree with each other or with Raft (issue 21).
    #[error(transparent)]
    Integrity(#[from] log::integrity::IntegrityError),
    /// The engine could not start.
    #[error(transparent)]
    Engine(#[from] raft::RaftError),
    /// The event loop stopped on an error.
    #[error(transparent)]
    Loop(#[from] event_loop::LoopError),
    /// A listener could not be bound.
    #[error("binding {what} {address}: {source}")]
    Bind {
        /// Which listener.
        what: &'static str,
        /// The address.
        address: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The TLS settings of the controller listener do not load.
    #[error("TLS of listener {listener}: {source}")]
    Tls {
        /// The listener name.
        listener: String,
        /// What failed.
        source: crate::wire::tls::TlsError,
    },
    /// The listener above Raft could not be built (e.g. `bootstrap.checkpoint`
    /// in the log dir could not be read).
    #[error(transparent)]
    Listener(Box<dyn std::error::Error + Send + Sync>),
    /// The bootstrap checkpoint could not be read.
    #[error("reading the bootstrap checkpoint {path}: {reason}")]
    Bootstrap {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Reads the voter set from the `00000000000000000000-0000000000.checkpoint`
/// written by `format --standalone` / `--initial-controllers` (KIP-853), if any.
fn bootstrap_voters(partition_dir: &std::path::Path) -> Result<Option<VoterSet>, ServerError> {
    let id = OffsetAndEpoch::new(0, 0);
    let path = partition_dir.join(log::snapshot::snapshot_file_name(id));
    if !path.exists() {
        return Ok(None);
    }
    let bad = |reason: String| ServerError::Bootstrap {
        path: path.clone(),
        reason,
    };
    let reader = SnapshotReader::open(partition_dir, id)?;
    let size = usize::try_from(reader.size()).map_err(|_| bad("too large".into()))?;
    let bytes = reader.read(0, size)?;
    let mut voters = None;
    for item in iter_batches(&bytes, true) {
        let (header, batch) = item.map_err(|e| bad(e.to_string()))?;
        if !header.is_control() {
            continue;
        }
        let decoded = DecodedBatch::decode(batch).map_err(|e| bad(e.to_string()))?;
        for record in decoded.control_records().map_err(|e| bad(e.to_string()))? {
            if let ControlRecord::Voters(v) = record {
                voters = Some(VoterSet::from_record(&v));
            }
        }
    }
    Ok(voters)
}

/// A bound controller listener.
struct BoundListener {
    /// Its name in `controller.listener.names`.
    name: Arc<str>,
    /// The socket.
    socket: tokio::net::TcpListener,
    /// Its TLS server (`None`: PLAINTEXT).
    tls: Option<Arc<crate::wire::tls::TlsServer>>,
}

/// The TLS server or client `load` builds from the `ssl.*` settings of
/// listener `name`; `None` for a PLAINTEXT listener.
///
/// Errors: [`ServerError::Tls`] naming the listener.
fn listener_tls<T>(
    config: &ControllerConfig,
    name: &str,
    load: impl FnOnce(crate::config::security::SslSettings) -> Result<T, crate::wire::tls::TlsError>,
) -> Result<Option<Arc<T>>, ServerError> {
    config
        .listener_security(name)
        .ssl
        .clone()
        .map(|ssl| {
            load(ssl).map(Arc::new).map_err(|source| ServerError::Tls {
                listener: name.to_owned(),
                source,
            })
        })
        .transpose()
}

/// Loads the TLS of every controller listener mapped to SSL, then binds
/// every controller listener (`controller.listener.names`, in order; an
/// empty host is every interface), as Kafka's `SocketServer` starts one
/// acceptor per listener. Nothing is bound when a certificate does not load.
///
/// Errors: [`ServerError::Tls`] naming the listener; [`ServerError::Bind`]
/// naming the listener and its address.
async fn bind_controller_listeners(
    config: &ControllerConfig,
) -> Result<Vec<BoundListener>, ServerError> {
    let mut tls = Vec::new();
    for endpoint in config.controller_listeners() {
        let server = listener_tls(config, &endpoint.name, crate::wire::tls::TlsServer::server)?;
        tls.push((endpoint, server));
    }
    let mut bound = Vec::new();
    for (endpoint, server) in tls {
        let address = if endpoint.host.is_empty() {
            format!("0.0.0.0:{}", endpoint.port)
        } else {
            endpoint.address()
        };
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|source| ServerError::Bind {
                what: "the controller listener",
                address: format!("{} {address}", endpoint.name),
                source,
            })?;
        let protocol = config.listener_security(&endpoint.name).protocol;
        tracing::info!(listener = %endpoint.name, %address, protocol = protocol.name(),
            "controller listener bound");
        bound.push(BoundListener {
            name: Arc::from(endpoint.name.as_str()),
            socket: listener,
            tls: server,
        });
    }
    Ok(bound)
}

/// What the node tells the factory of its [`Listener`] (see [`run`]).
#[derive(Debug)]
pub struct NodeInfo<'a> {
    /// The node's configuration.
    pub config: &'a ControllerConfig,
    /// The cluster id of `meta.properties` (Kafka text form).
    pub cluster_id: &'a str,
    /// The client settings of the peer connections (timeouts, backoff,
    /// client id), for a listener that opens connections of its own.
    pub client_config: &'a ClientConfig,
    /// The log start offset when the node starts.
    pub log_start_offset: i64,
    /// Kafka's controller broker gauges on `/metrics`, for the listener to set.
    pub broker_gauges: metrics::BrokerGauges,
    /// Where a listener publishes the committed ACLs the authorizer reads.
    pub acls: crate::acl::AclsConfig,
}

/// The error of a listener factory, reported as [`ServerError::Listener`].
pub type ListenerBuildError = Box<dyn std::error::Error + Send + Sync>;

/// Runs a controller until `shutdown` becomes `true` (SIGTERM), then hands
/// over leadership (bounded by [`event_loop::SHUTDOWN_TIMEOUT_MS`]), flushes
/// and returns. `above` builds what runs above Raft, once the log is open:
/// the listener and the HTTP routes it serves (merged into the endpoint's).
///
/// Refuses to start, touching no file, on an unformatted log dir, a node id
/// or (with `expected_cluster_id`) cluster id that differs from
/// `meta.properties`. `stages`, for the benchmark workload only, is fed
/// with the leader's stage timestamps ([`stages`]).
///
/// Errors: [`ServerError`].
pub async fn run<Lst, F>(
    config: ControllerConfig,
    expected_cluster_id: Option<String>,
    above: F,
    stages: Option<stages::SharedStages>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), ServerError>
where
    Lst: Listener<FileLog>,
    F: FnOnce(&NodeInfo<'_>) -> Result<(Lst, axum::Router), ListenerBuildError>,
{
    for key in &config.unknown_keys {
        tracing::warn!(key = %key, "unknown configuration key ignored");
    }
    let dir = config.metadata_log_dir.clone();
    let meta = MetaProperties::read(&dir)?
        .ok_or_else(|| ServerError::NotFormatted { dir: dir.clone() })?;
    if meta.node_id != config.node_id {
        return Err(ServerError::NodeIdMismatch {
            dir,
            stored: meta.node_id,
            configured: config.node_id,
        });
    }
    // The exact text of meta.properties, as Kafka sends it (docs/interop.md).
    let cluster_id = meta.cluster_id.clone();
    if let Some(expected) = expected_cluster_id
        && expected != cluster_id
    {
        return Err(ServerError::ClusterIdMismatch {
            dir,
            stored: cluster_id,
            expected,
        });
    }
    let partition_dir = log::partition_dir(&dir);
    let controller_listener = config.controller_listener().clone();
    // kraft.version 1 (KIP-853) when the voters come from the bootstrap
    // checkpoint, or when the node knows none and learns them from the log
    // (formatted with --no-initial-controllers); 0 for a static quorum.
    let (voters, kraft_version) = match bootstrap_voters(&partition_dir)? {
        Some(voters) => {
            if !config.static_voters.is_empty() {
                tracing::warn!(
                    "controller.quorum.voters ignored: the bootstrap checkpoint holds the voter set (KIP-853)"
                );
            }
            (voters, 1)
        }
        None if config.static_voters.is_empty() => (VoterSet::new(Vec::new()), 1),
        None => (
            VoterSet::new(config.static_voters.iter().map(|v| {
                Voter::new(
                    ReplicaKey::of(v.id),
                    Some(Endpoint::new(
                        controller_listener.name.clone(),
                        v.host.clone(),
                        v.port,
                    )),
                )
            })),
            0,
        ),
    };
    // quorum-state is read before the log opens (opening may write the
    // recovery point): a file that does not parse stops the node first.
    let quorum_state = QuorumStateStore::new(&partition_dir);
    let persisted = quorum_state.read()?;
    let log = FileLog::open(
        &partition_dir,
        FileLogConfig {
            segment_bytes: config.segment_bytes,
            ..FileLogConfig::default()
        },
    )?;
    // Issue 21: the files must agree with each other and with Raft before
    // the engine trusts them (a lying disk stops this node, not the quorum).
    log::integrity::check_at_start(
        &log,
        quorum_state.path(),
        persisted.as_ref(),
        log::integrity::LocalIdentity {
            log_dir: &dir,
            node_id: meta.node_id,
            directory_id: meta.directory_id,
        },
    )?;
    let stored = persisted.map(|s| raft::ElectionState {
        epoch: s.epoch,
        leader_id: s.leader_id,
        voted_key: s.voted_key.map(|(id, dir)| ReplicaKey {
            id,
            directory_id: dir,
        }),
    });

    let t = config.timings;
    let mut raft_config = RaftConfig::new(config.node_id, voters);
    raft_config.directory_id = Some(meta.directory_id);
    raft_config.cluster_id = Some(cluster_id.clone());
    raft_config.kraft_version = kraft_version;
    raft_config.bootstrap_servers = config
        .bootstrap_servers
        .iter()
        .map(|(host, port)| Endpoint::new(controller_listener.name.clone(), host.clone(), *port))
        .collect();
    raft_config.election_timeout_ms = t.election_timeout_ms;
    raft_config.fetch_timeout_ms = t.fetch_timeout_ms;
    raft_config.request_timeout_ms = t.request_timeout_ms;
    raft_config.retry_backoff_ms = t.retry_backoff_ms;
    raft_config.append_linger_ms = t.append_linger_ms;
    raft_config.retention = log::RetentionConfig {
        max_bytes: Some(config.max_retention_bytes),
        max_ms: Some(config.max_retention_ms),
    };
    let rng = Box::new(rand::rngs::StdRng::from_os_rng());
    let (engine, initial) = RaftEngine::new(raft_config, log, stored, rng, event_loop::now_ms())?;
    tracing::info!(node_id = config.node_id, cluster_id = %cluster_id,
        directory_id = %uuid_to_kafka_string(meta.directory_id),
        voters = ?engine.voters().ids().collect::<Vec<_>>(), "starting controller");

    // TLS loads before anything binds: a listener mapped to SSL whose
    // certificates do not load stops the node (fail closed). Outgoing
    // connections to the other controllers use the settings of the Raft
    // listener (the first controller listener), the one they dial.
    let tls_client = listener_tls(
        &config,
        &controller_listener.name,
        crate::wire::tls::TlsClient::client,
    )?;
    let bound = bind_controller_listeners(&config).await?;

    let mut registry = Registry::default();
    let metrics = Arc::new(metrics::RaftMetrics::new(&mut registry));
    let broker_gauges = metrics::BrokerGauges::new(&mut registry);
    let open_files = limits::raise_open_file_limit();
    let limiter = Arc::new(limits::ConnectionLimiter::new(
        config.limits.clone(),
        open_files,
        limits::ListenerMetrics::new(&mut registry),
    ));
    tracing::info!(
        max_connections = limiter.max_total(),
        open_files = ?open_files,
        "connection limits"
    );
    let (readiness_tx, readiness_rx) = watch::channel(http::Readiness::starting());
    let http_listener = tokio::net::TcpListener::bind(config.http_listener)
        .await
        .map_err(|source| ServerError::Bind {
            what: "the http listener",
            address: config.http_listener.to_string(),
            source,
        })?;
    // With the default (port 0) this is where a user finds the endpoint.
    match http_listener.local_addr() {
        Ok(address) => tracing::info!(%address, "http endpoint listening"),
        Err(e) => tracing::warn!(error = %e, "http endpoint bound, its address unknown"),
    }
    let client_config = ClientConfig {
        request_timeout: Duration::from_millis(t.request_timeout_ms),
        retry_backoff: Duration::from_millis(t.retry_backoff_ms),
        client_id: format!("kraft-controller-{}", config.node_id),
        tls: tls_client,
        ..ClientConfig::default()
    };
    let acls = crate::acl::AclsConfig {
        shared: Arc::default(),
        authorizer_enabled: config.authorizer.enabled,
    };
    let (listener_above, routes) = above(&NodeInfo {
        config: &config,
        cluster_id: &cluster_id,
        client_config: &client_config,
        log_start_offset: log::ReplicatedLog::start_offset(engine.log()),
        broker_gauges,
        acls: acls.clone(),
    })
    .map_err(ServerError::Listener)?;
    let router = http::router(registry, readiness_rx).merge(routes);
    let mut http_shutdown = shutdown.clone();
    let http_task = tokio::spawn(async move {
        let stop = async move {
            let _ = http_shutdown.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(http_listener, router)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::error!(error = %e, "http endpoint failed");
        }
    });

    let (request_tx, request_rx) = mpsc::channel(1024);
    // One accept loop per controller listener, all feeding the one event
    // loop; they share the connection quota, the request memory and the
    // connection ids (Kafka's `max.connections` counts the whole node).
    let context = connection::ConnectionContext {
        max_frame_bytes: config.socket_request_max_bytes,
        requests: request_tx,
        authorizer: Arc::new(authz::Authorizer::with_acls(
            config.authorizer.clone(),
            acls.shared,
        )),
        request_memory: connection::RequestMemory::new(
            config.limits.queued_max_request_bytes,
            config.limits.unauthenticated_max_frame_bytes,
        ),
        limiter,
        listener_name: Arc::from(controller_listener.name.as_str()),
    };
    let connection_ids = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let accept_tasks: Vec<_> = bound
        .into_iter()
        .map(|bound| {
            tokio::spawn(accept::accept_loop(
                bound.socket,
                accept::AcceptConfig {
                    tls: bound.tls,
                    principal_mapper: Arc::new(config.principal_mapper.clone()),
                    connection_ids: connection_ids.clone(),
                },
                connection::ConnectionContext {
                    listener_name: bound.name,
                    ..context.clone()
                },
            ))
        })
        .collect();
    drop(context);

    let (peer_tx, peer_rx) = mpsc::unbounded_channel();
    let ctx = event_loop::LoopContext {
        quorum_state,
        peers: PeerManager::new(client_config, peer_tx),
        peer_responses: peer_rx,
        requests: request_rx,
        readiness: readiness_tx,
        metrics,
        stages,
        flush_on_loop_below: event_loop::FLUSH_ON_LOOP_BELOW,
    };
    let result = event_loop::run(engine, initial, ctx, listener_above, shutdown).await;
    for task in &accept_tasks {
        task.abort();
    }
    match result {
        Ok(engine) => {
            let mut log = engine.into_log();
            log::ReplicatedLog::flush(&mut log)?;
            http_task.abort();
            tracing::info!("controller stopped cleanly");
            Ok(())
        }
        Err(e) => {
            http_task.abort();
            Err(e.into())
        }
    }
}
