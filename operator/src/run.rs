//! `kraft-operator run`: wires the reconciler to the world. Tracing logs,
//! the HTTP endpoint (`/metrics`, `/healthz`, `/readyz`), leader election
//! between operator replicas, graceful shutdown on SIGTERM/SIGINT.
//!
//! Owns process lifetime only; everything a reconcile does is in
//! [`crate::controller`].

use std::{
    net::SocketAddr,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use kube::{Client, runtime::events::Reporter};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::{
    controller::{self, Context},
    lease::LeaderElector,
    metrics::Metrics,
    quorum::QuorumClient,
    validate::DEFAULT_CLUSTER_DOMAIN,
};

/// Arguments of `kraft-operator run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Watch KraftQuorums in this namespace only (all namespaces when absent).
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Address of the HTTP endpoint (/metrics, /healthz, /readyz).
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Cluster DNS domain used in the controllers' endpoints.
    #[arg(long, default_value = DEFAULT_CLUSTER_DOMAIN)]
    pub cluster_domain: String,
    /// Name of the coordination.k8s.io Lease used for leader election.
    #[arg(long, default_value = "kraft-operator")]
    pub lease_name: String,
    /// Namespace of the Lease (the operator's own; the client's default when absent).
    #[arg(long, env = "POD_NAMESPACE")]
    pub lease_namespace: Option<String>,
    /// This replica's identity in the Lease (the pod name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Seconds a lease stays valid without renewal.
    #[arg(long, default_value_t = 15)]
    pub lease_duration_seconds: u64,
    /// Run without leader election (a single replica, or local development).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Timeout of each admin request to a controller, ms.
    #[arg(long, default_value_t = 5_000)]
    pub admin_timeout_ms: u64,
    /// Labels of the operator's own pods (`k=v,k=v`), so the quorums'
    /// NetworkPolicies let it reach the controller listener (with
    /// `POD_NAMESPACE`); the policies do not name the operator when absent.
    #[arg(long, env = "OPERATOR_POD_LABELS")]
    pub operator_pod_labels: Option<String>,
}

/// Parses `k=v,k=v` (empty parts ignored); `None` when a part has no `=`.
pub fn parse_labels(s: &str) -> Option<std::collections::BTreeMap<String, String>> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[derive(Clone)]
struct Http {
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
}

async fn metrics(State(s): State<Http>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

async fn readyz(State(s): State<Http>) -> impl IntoResponse {
    if s.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "starting\n")
    }
}

/// The HTTP endpoint's routes. `/readyz` answers 200 once the API server was
/// reached (a standby replica is ready too: it is ready to take over).
fn router(metrics_: Arc<Metrics>, ready: Arc<AtomicBool>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(Http {
            metrics: metrics_,
            ready,
        })
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    warn!(error = %e, "cannot listen for SIGTERM; SIGINT only");
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Runs the operator with `quorum` as its admin client; returns the exit code.
pub fn main<Q: QuorumClient>(args: RunArgs, quorum: impl FnOnce(Duration) -> Q) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            error!(error = %e, "cannot start the tokio runtime");
            return ExitCode::FAILURE;
        }
    };
    let q = quorum(Duration::from_millis(args.admin_timeout_ms));
    runtime.block_on(run(args, q))
}

async fn run<Q: QuorumClient>(args: RunArgs, quorum: Q) -> ExitCode {
    let client = match Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            error!(error = %e, "cannot build a kubernetes client (in-cluster or kubeconfig)");
            return ExitCode::FAILURE;
        }
    };
    let identity = args
        .identity
        .clone()
        .unwrap_or_else(|| format!("kraft-operator-{}", uuid::Uuid::new_v4()));
    let reporter = Reporter {
        controller: "kraft-operator".into(),
        instance: Some(identity.clone()),
    };
    let mut ctx = Context::new(client.clone(), quorum, reporter, &args.cluster_domain);
    if let (Some(ns), Some(labels)) = (&args.lease_namespace, &args.operator_pod_labels) {
        let Some(pod_labels) = parse_labels(labels) else {
            error!(labels = %labels, "--operator-pod-labels is not k=v,k=v");
            return ExitCode::FAILURE;
        };
        ctx.operator_peer = Some(crate::validate::OperatorPeer {
            namespace: ns.clone(),
            pod_labels,
        });
    }
    let ctx = Arc::new(ctx);

    // Shutdown: a signal, or (below) losing the lease.
    let (stop_tx, stop_rx) = watch::channel(false);
    let signal_tx = stop_tx.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        info!("shutdown requested");
        let _ = signal_tx.send(true);
    });
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    let ready = Arc::new(AtomicBool::new(false));
    let listener = match tokio::net::TcpListener::bind(args.http_addr).await {
        Ok(l) => l,
        Err(e) => {
            error!(addr = %args.http_addr, error = %e, "cannot bind the http endpoint");
            return ExitCode::FAILURE;
        }
    };
    let app = router(ctx.metrics.clone(), ready.clone());
    let http_stop = stopped(stop_rx.clone());
    let http = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(http_stop)
            .await
        {
            error!(error = %e, "http endpoint failed");
        }
    });
    if let Err(e) = client.apiserver_version().await {
        error!(error = %e, "cannot reach the api server");
        return ExitCode::FAILURE;
    }
    ready.store(true, Ordering::Relaxed);
    info!(addr = %args.http_addr, namespace = args.namespace.as_deref().unwrap_or("<all>"), "kraft-operator started");

    let elector = (!args.no_leader_election).then(|| {
        let ns = args
            .lease_namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        LeaderElector::new(
            client.clone(),
            &ns,
            &args.lease_name,
            &identity,
            Duration::from_secs(args.lease_duration_seconds.max(3)),
        )
    });
    let lost = Arc::new(AtomicBool::new(false));
    if let Some(e) = &elector {
        info!(lease = %args.lease_name, identity = %identity, "waiting for leadership");
        tokio::select! {
            _ = e.acquire() => {},
            _ = stopped(stop_rx.clone()) => {
                let _ = http.await;
                return ExitCode::SUCCESS;
            }
        }
        let keeper = e.clone();
        let lost_tx = stop_tx.clone();
        let lost_flag = lost.clone();
        tokio::spawn(async move {
            keeper.keep().await;
            lost_flag.store(true, Ordering::SeqCst);
            let _ = lost_tx.send(true);
        });
    }

    controller::run(ctx, args.namespace.as_deref(), stopped(stop_rx.clone())).await;
    info!("reconciler stopped");
    // Exit non-zero when the lease was lost, so the pod restarts and rejoins
    // the election cleanly; release it on an orderly shutdown.
    let lost = lost.load(Ordering::SeqCst);
    if let Some(e) = &elector
        && !lost
        && let Err(err) = e.release().await
    {
        warn!(error = %err, "cannot release the lease");
    }
    let _ = stop_tx.send(true);
    let _ = http.await;
    if lost {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A plain HTTP/1.1 GET over loopback; returns the status code and body.
    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        let code = out
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = out
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (code, body)
    }

    #[tokio::test]
    async fn the_http_endpoint_serves_metrics_health_and_readiness() {
        let metrics = Arc::new(Metrics::new());
        drop(metrics.reconcile_started());
        let ready = Arc::new(AtomicBool::new(false));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server =
            tokio::spawn(axum::serve(listener, router(metrics, ready.clone())).into_future());
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 503);
        ready.store(true, Ordering::Relaxed);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        let (code, body) = get(addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(body.contains("kraft_operator_reconciles_total 1"), "{body}");
        server.abort();
    }
}
