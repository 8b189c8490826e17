//! `kraft-controller run`: start a controller from a Kafka-style properties
//! file, and pick what runs above Raft: the metadata listener
//! ([`MetadataListener`]), or the benchmark workload ([`WorkloadListener`])
//! with `--workload-throughput`.
//!
//! It owns the wiring of a listener from the node's configuration; it must
//! not run either itself (the server drives them).

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex},
};

use clap::Args;
use tokio::sync::watch;

use crate::{
    config::ControllerConfig,
    metadata::{
        self,
        bootstrap::BootstrapMetadata,
        image::MetadataImage,
        listener::{MetadataConfig, MetadataListener},
        records::{ControllerEndpoint, ControllerFeature, RegisterControllerRecord},
        snapshot::SnapshotPolicy,
        view::ImageView,
    },
    server::{self, ListenerBuildError, NodeInfo, exit},
    wire::client::ClientConfig,
    workload::{
        self, SharedWorkload, Workload, WorkloadConfig,
        listener::{WorkloadListener, WorkloadListenerConfig},
    },
};

/// Arguments of `kraft-controller run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The controller's `server.properties`.
    #[arg(long, short = 'c')]
    config: PathBuf,
    /// Override a property of the file, `key=value` (repeatable; as Kafka's
    /// `kafka-server-start --override`), e.g. `--override node.id=2`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Refuse to start unless meta.properties holds this cluster id.
    #[arg(long)]
    cluster_id: Option<String>,
    /// Benchmark only: the leader appends this many records per second, one
    /// record per append, and reports append-to-commit latency on
    /// `GET /workload` (Kafka's `TestRaftServer --throughput`).
    #[arg(long, value_name = "RECORDS_PER_SEC")]
    workload_throughput: Option<u32>,
    /// Benchmark only: bytes per workload record (`TestRaftServer --record-size`).
    #[arg(long, value_name = "BYTES", default_value_t = 256)]
    workload_record_size: usize,
}

/// Runs the controller until SIGTERM or SIGINT; exit code 1 on any error,
/// with a one-line message on stderr, also written to `/dev/termination-log`
/// when it exists; a full volume (ENOSPC) names `metadata.log.dir` and its
/// free space ([`exit::fatal_line`]).
pub fn run(args: RunArgs) -> ExitCode {
    let config = match ControllerConfig::load_with_overrides(&args.config, &args.overrides) {
        Ok(c) => c,
        Err(e) => {
            return stop(&format!("kraft-controller run: {e}"));
        }
    };
    // What runs above Raft. The metadata listener's bootstrap is read here,
    // before the log is opened, so that a `metadata.version` this controller
    // does not implement stops the node with nothing written (issue 22).
    let above = match args.workload_throughput {
        None => match BootstrapMetadata::read(&config.metadata_log_dir) {
            Ok(bootstrap) => Above::Metadata(bootstrap),
            Err(e) => {
                return stop(&format!("kraft-controller run: {e}"));
            }
        },
        Some(rate) => match WorkloadConfig::new(rate, args.workload_record_size) {
            Ok(w) => Above::Workload(w),
            Err(e) => {
                return stop(&format!("kraft-controller run: {e}"));
            }
        },
    };
    // Kafka's log directory lock: one process per directory; `recover`
    // refuses a directory held here. Taken after the bootstrap is read, so
    // that a refused bootstrap leaves the directory as it was.
    let _lock = match super::dir_lock::try_lock(&config.metadata_log_dir) {
        Ok(lock) => lock,
        Err(e) => {
            return stop(&format!("kraft-controller run: {e}"));
        }
    };
    // One thread runs every task: the event loop, the connections, the HTTP
    // endpoint; a leader's flush fsyncs (a follower's once its disk is slow,
    // decisions D5) and the writes of the snapshots this node generates run
    // on tokio's blocking threads. With worker threads the
    // leader spent more CPU per committed record (5-48 % in interleaved
    // runs, decisions D21).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            return stop(&format!(
                "kraft-controller run: starting the tokio runtime: {e}"
            ));
        }
    };
    // The handlers are installed here, before the startup runs (see
    // `shutdown_signal`); a process that could not stop cleanly stops now.
    let signalled = {
        let _runtime = runtime.enter();
        match shutdown_signal() {
            Ok(s) => s,
            Err(e) => {
                return stop(&format!(
                    "kraft-controller run: installing the SIGTERM and SIGINT handlers: {e}"
                ));
            }
        }
    };
    let log_dir = config.metadata_log_dir.clone();
    let result = runtime.block_on(async move {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            signalled.await;
            tracing::info!("signal received: shutting down");
            let _ = tx.send(true);
        });
        match above {
            Above::Metadata(bootstrap) => {
                server::run(
                    config,
                    args.cluster_id,
                    move |node: &NodeInfo<'_>| metadata_listener(node, bootstrap),
                    None,
                    rx,
                )
                .await
            }
            Above::Workload(w) => {
                let shared: SharedWorkload = Arc::new(Mutex::new(Workload::new(w)));
                let above = shared.clone();
                let stages = shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .stages();
                let result = server::run(
                    config,
                    args.cluster_id,
                    move |node: &NodeInfo<'_>| Ok(workload_listener(node, above)),
                    Some(stages),
                    rx,
                )
                .await;
                let report = shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .report();
                if let Ok(json) = serde_json::to_string(&report) {
                    println!("workload-report {json}");
                }
                result
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, also where Kubernetes looks for it (issue 21).
            let line = format!("kraft-controller run: {}", exit::fatal_line(&log_dir, &e));
            tracing::error!(error = %e, "controller stopped");
            stop(&line)
        }
    }
}

/// What `run` starts above Raft.
enum Above {
    /// The metadata listener, with the bootstrap metadata of the log dir
    /// (what the first leader of an empty log writes; Kafka reads it at
    /// start too, whether or not it will lead).
    Metadata(BootstrapMetadata),
    /// The benchmark workload.
    Workload(WorkloadConfig),
}

/// Prints `line` on stderr and in `/dev/termination-log` (when it exists);
/// exit code 1.
fn stop(line: &str) -> ExitCode {
    eprintln!("{line}");
    exit::write_termination_log(line);
    ExitCode::FAILURE
}

/// The metadata listener of a node, with its `/metadata` route.
fn metadata_listener(
    node: &NodeInfo<'_>,
    bootstrap: BootstrapMetadata,
) -> Result<(MetadataListener, axum::Router), ListenerBuildError> {
    let config = node.config;
    // KIP-919: this process's registration, with a fresh incarnation id.
    let registration = RegisterControllerRecord {
        controller_id: config.node_id,
        incarnation_id: uuid::Uuid::new_v4(),
        zk_migration_ready: false,
        endpoints: config
            .advertised_controller_endpoints()
            .into_iter()
            .map(|e| ControllerEndpoint {
                security_protocol: config.security.get(&e.name).map_or(0, |s| s.protocol.id()),
                name: e.name,
                host: e.host,
                port: e.port,
            })
            .collect(),
        features: crate::wire::supported_features()
            .into_iter()
            .map(|f| ControllerFeature {
                name: f.name.to_owned(),
                min_supported_version: f.min_version,
                max_supported_version: f.max_version,
            })
            .collect(),
    };
    let (view_tx, view_rx) = watch::channel(ImageView::of(&MetadataImage::default(), &[]));
    let listener = MetadataListener::new(
        MetadataConfig {
            cluster_id: node.cluster_id.to_owned(),
            registration,
            listener_name: config.controller_listener().name.clone(),
            bootstrap,
            client: ClientConfig {
                client_id: format!("kraft-controller-{}-registration", config.node_id),
                ..node.client_config.clone()
            },
            view: view_tx,
            max_idle_interval_ms: config.max_idle_interval_ms,
            broker_session_timeout_ms: config.broker_session_timeout_ms,
            replication: config.replication,
            leader_imbalance_check_interval_ms: config
                .auto_leader_rebalance_enable
                .then_some(config.leader_imbalance_check_interval_ms),
            broker_gauges: node.broker_gauges.clone(),
            acls: node.acls.clone(),
            snapshot_policy: SnapshotPolicy {
                max_bytes_between: config.max_bytes_between_snapshots,
                max_interval_ms: config.max_snapshot_interval_ms,
            },
        },
        node.log_start_offset,
        server::event_loop::now_ms(),
    );
    Ok((listener, metadata::http::router(view_rx)))
}

/// The benchmark workload's listener over `shared`, with its `/workload`
/// route.
fn workload_listener(
    node: &NodeInfo<'_>,
    shared: SharedWorkload,
) -> (WorkloadListener, axum::Router) {
    let router = workload::router(shared.clone());
    let listener = WorkloadListener::new(
        shared,
        WorkloadListenerConfig {
            cluster_id: node.cluster_id.to_owned(),
            listener_name: node.config.controller_listener().name.clone(),
            max_idle_interval_ms: node.config.max_idle_interval_ms,
        },
        node.log_start_offset,
    );
    (listener, router)
}

/// Resolves at the first SIGTERM or SIGINT. The handlers are installed when
/// this is called (within the runtime), not when the future is first
/// polled: on the one runtime thread (decisions D21) a spawned task first
/// runs when the startup (log recovery, snapshot load) yields, and a signal
/// before that would have killed the process without its shutdown.
///
/// # Errors
/// The OS refused a handler (`tokio::signal::unix::signal`).
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
