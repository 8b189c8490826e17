//! The controller's HTTP endpoint, on its own port (`kraftwerk.http.listener`,
//! by default `127.0.0.1:0`: loopback, a port the OS picks; see
//! `config::DEFAULT_HTTP_LISTENER`):
//!
//! - `GET /healthz`: 200 while the process runs (liveness);
//! - `GET /readyz`: 200 when this node leads with a known high watermark,
//!   or knows a leader whose own Fetch answers, within the fetch timeout,
//!   showed it at the leader's high watermark (`RaftStatus::caught_up`); 503
//!   with the reason otherwise (readiness comes from the Raft state, never
//!   from an open port);
//! - `GET /metrics`: the Prometheus text exposition of the registry;
//! - the routes of the listener above Raft, merged in by [`super::run`]
//!   (`GET /metadata` of the metadata listener, `crate::metadata::http`;
//!   `GET /workload` of the benchmark workload).

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use prometheus_client::registry::Registry;
use tokio::sync::watch;

/// Whether the node is ready, and why (the body of `/readyz`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// `true`: `/readyz` answers 200.
    pub ready: bool,
    /// One line for humans, e.g. `follower of 1 in epoch 4, caught up`.
    pub reason: String,
    /// Ready only until then (wall clock, ms, as the engine's time): a
    /// follower's or observer's proof of being caught up expires after the
    /// fetch timeout even when the event loop has not run since (a paused
    /// or stalled process would answer from a stale state). `None`: no
    /// expiry (a leader, or not ready).
    pub until_ms: Option<u64>,
}

impl Readiness {
    /// The state before the engine has reported anything.
    pub fn starting() -> Self {
        Self {
            ready: false,
            reason: "starting".into(),
            until_ms: None,
        }
    }

    /// (ready, reason) as of `now_ms` (wall clock).
    pub fn at(&self, now_ms: u64) -> (bool, String) {
        match self.until_ms {
            Some(until) if self.ready && now_ms >= until => (
                false,
                format!(
                    "{}, but that expired {} ms ago (the fetch timeout passed) and nothing newer has been processed",
                    self.reason,
                    now_ms - until
                ),
            ),
            _ => (self.ready, self.reason.clone()),
        }
    }
}

#[derive(Debug)]
struct AppState {
    registry: Registry,
    readiness: watch::Receiver<Readiness>,
}

/// Builds the router; `registry` is rendered on `/metrics`.
pub fn router(registry: Registry, readiness: watch::Receiver<Readiness>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(Arc::new(AppState {
            registry,
            readiness,
        }))
}

async fn readyz(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let (ready, reason) = state.readiness.borrow().at(super::event_loop::now_ms());
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, format!("{reason}\n"))
}

async fn metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding metrics: {e}\n"),
        )
            .into_response(),
    }
}

/// Binds `addr` and serves the router until `shutdown` completes.
///
/// Errors: the bind error (address in use, permission), naming the address.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        std::io::Error::new(e.kind(), format!("binding the http listener {addr}: {e}"))
    })?;
    tracing::info!(%addr, "http endpoint listening");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("writes");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("reads");
        let code = out[9..12].parse().expect("status code");
        (code, out)
    }

    #[tokio::test]
    async fn readyz_follows_the_readiness_the_event_loop_publishes() {
        let (tx, rx) = watch::channel(Readiness::starting());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let addr = listener.local_addr().expect("addr");
        let app = router(Registry::default(), rx);
        tokio::spawn(async move { axum::serve(listener, app).await });
        assert_eq!(get(addr, "/healthz").await.0, 200);
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 503);
        assert!(body.ends_with("starting\n"), "{body}");
        tx.send_replace(Readiness {
            ready: true,
            reason: "leader in epoch 3".into(),
            until_ms: None,
        });
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 200);
        assert!(body.ends_with("leader in epoch 3\n"), "{body}");
        // A follower's proof of being caught up that nothing renewed.
        let now = super::super::event_loop::now_ms();
        tx.send_replace(Readiness {
            ready: true,
            reason: "follower of 1 in epoch 3, caught up".into(),
            until_ms: Some(now + 60_000),
        });
        assert_eq!(get(addr, "/readyz").await.0, 200);
        tx.send_replace(Readiness {
            ready: true,
            reason: "follower of 1 in epoch 3, caught up".into(),
            until_ms: Some(now - 1),
        });
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 503, "{body}");
        assert!(body.contains("the fetch timeout passed"), "{body}");
        assert_eq!(get(addr, "/metrics").await.0, 200);
    }
}
